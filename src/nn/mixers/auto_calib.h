/* auto_calib.h: the calibration file of `mixer: "auto"` (docs/baselines.md): the sequence
 * length from which GMA's layer is faster than sdpa's on this machine, as `gmabench
 * calibrate` measures it, read when model.auto_threshold is "calibrated". The threshold
 * taken from it is kept within the practitioner's band [AUTO_BAND_LO, AUTO_BAND_HI]. */
#ifndef GMA_AUTO_CALIB_H
#define GMA_AUTO_CALIB_H

#define AUTO_BAND_LO 2048
#define AUTO_BAND_HI 4096
#define AUTO_CALIB_FORMAT "gma-auto-calibration" /* the file's "format" */

/* The file at path: {"format": AUTO_CALIB_FORMAT, "crossover": N, ...} with N >= 1 the
 * measured crossover, or -1 when GMA was ahead at no length measured. 0 with *measured = N
 * and *threshold = N clamped to the band (-1: the band's top); -1 with one line
 * "PATH: ..." (missing file, malformed JSON, wrong format, no or bad crossover). */
int auto_calibration_read(const char *path, int *measured, int *threshold);
#endif
