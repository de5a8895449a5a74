/* config_registry.h: the one place that installs every module's configuration section
 * (the run's keys, the model backbone, the stem, the pooling, the classifier head, the
 * mixers, the optimiser, the LM data sources, the classification data), in the order of
 * the configuration reference. Every program and test calls it before its first
 * cfg_defaults or checkpoint read; calling it again is harmless. */
#ifndef GMA_CONFIG_REGISTRY_H
#define GMA_CONFIG_REGISTRY_H

void config_register_all(void);
#endif
