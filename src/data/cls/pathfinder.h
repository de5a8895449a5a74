/* pathfinder.h: the Pathfinder generator of Long Range Arena (Linsley et al. 2018, the
 * "snakes" procedure): two target contours of paddles starting near each other, short
 * distractor contours, two circular markers; label 1 when the markers sit on the two ends
 * of one contour, 0 when they sit on different contours. Deterministic from a seed: image i
 * of a set uses its own random stream, so any image can be rendered alone. Parameters per
 * resolution (32, 64, 128, 256) and difficulty (easy, intermediate, hard) are those of the
 * LRA release; docs/lra.md (Pathfinder) lists each with its source.
 */
#ifndef GMA_PATHFINDER_H
#define GMA_PATHFINDER_H
#include <stddef.h>
#include <stdint.h>

typedef struct PathfinderParams {
    int res;                    /* window_size: res x res pixels */
    int padding;                /* border kept free for the first target paddle */
    int antialias_scale;        /* drawing scale: paddles and markers are drawn this many times larger, then resized */
    int seed_distance;          /* distance of the two target contours' first tails */
    double marker_radius;
    int contour_length;         /* paddles per target contour */
    int distractor_length;      /* paddles per distractor contour */
    int num_distractor_snakes;
    double continuity;          /* turn penalty: weight cos^2(min(continuity*turn, pi/2)) */
    int paddle_length;
    double paddle_thickness;
    int paddle_margin[4];       /* paddle_margin_list: one drawn per image */
    int n_margins;
    double snake_contrast;      /* snake_contrast_list (one element in every release setting) */
    double paddle_contrast;     /* paddle_contrast_list (one element) */
    int max_target_contour_retrial;
    int max_distractor_contour_retrial;
    int max_paddle_retrial;
} PathfinderParams;

/* The release's parameters for res (32, 64, 128, 256) and difficulty ("easy",
 * "intermediate", "hard"). Returns 0, or -1 with the error set. */
int pathfinder_params(PathfinderParams *p, int res, const char *difficulty);
/* The release's directory name of a difficulty: curv_baseline, curv_contour_length_9,
 * curv_contour_length_14; NULL for an unknown name. */
const char *pathfinder_split_pattern(const char *difficulty);

/* Contour map values. */
enum { PF_NONE = 0, PF_TARGET_A = 1, PF_TARGET_B = 2, PF_DISTRACTOR = 3 };

typedef struct PathfinderImage {
    int res;
    uint8_t *pix;       /* res*res gray bytes, as written to the PNG */
    uint8_t *contour;   /* res*res: the 4-connected skeleton of every contour (paddles and the gaps
                         * between consecutive paddles), PF_TARGET_A/B or PF_DISTRACTOR; for checks */
    int label;          /* 1: both markers on target A (or both on B); 0: one on each */
    int marker[2][2];   /* (row, col) of the origin marker and of the terminal marker */
    int margin;         /* the paddle margin drawn for this image */
    int distractors;    /* distractor contours placed (some may not fit) */
} PathfinderImage;

/* Render image `index` of the set with `seed`. Returns 0, or -1 with the error set. */
int pathfinder_render(const PathfinderParams *p, uint64_t seed, uint64_t index, PathfinderImage *img);
void pathfinder_image_free(PathfinderImage *img);

/* One metadata line of the release (snakes2.py accumulate_meta), without the newline:
 * "imgs/B sample_I.png I LABEL continuity contour_length distractor_length paddle_length
 *  paddle_thickness margin 1". Returns the length written (truncated to cap). */
int pathfinder_meta_line(char *out, size_t cap, const PathfinderParams *p, int batch, int i, int label,
                         int margin);

/* Write n images to out_dir/<pattern>/imgs/<batch>/sample_<i>.png with per_batch images per
 * batch and out_dir/<pattern>/metadata/<batch>.npy (text lines, as the release's reader
 * parses them). Image k (0-based over the whole set) is batch k / per_batch, sample
 * k % per_batch, rendered with pathfinder_render(p, seed, k). Counts labels into
 * *positives when not NULL. Returns 0, or -1 with the error set. */
int pathfinder_generate(const char *out_dir, const PathfinderParams *p, const char *difficulty, long n,
                        uint64_t seed, int per_batch, long *positives);

#endif
