/* lm_sources.h: the registry of data sources (data.source), one X-macro line per source;
 * lmdata.h derives the enum, the config's choices and the key's description from it,
 * lmdata.c the table of readers. A source is its file (an LmSource, lm_source.h), one line
 * here and its test (docs/data.md, "Adding a data source"). */
#ifndef GMA_LM_SOURCES_H
#define GMA_LM_SOURCES_H
#include "data/lm/lm_source.h"

/* name, its reader (an LmSource), its description in the reference of data.source */
#define DATA_SOURCES(X, SEP)                                                                                        \
    X(recall, recall_source, "the embedded associative-recall generator") SEP                                    \
    X(mqar, mqar_source, "Zoology's multi-query associative recall (docs/mqar.md)") SEP                          \
    X(passkey, passkey_source, "passkey retrieval at long lengths (docs/longctx.md)") SEP                        \
    X(xmqar, xmqar_source, "MQAR split in a context and a query sequence, for cross-attention (docs/cross.md)") SEP \
    X(shards, shards_source, "token shards in data.path") SEP                                                    \
    X(cls, cls_source, "a classification task (data.task) for model.task \"classify\"")

/* every reader of the registry, declared from its line */
#define DATA_SOURCE_DECL_(name, reader, doc) extern const LmSource reader;
DATA_SOURCES(DATA_SOURCE_DECL_, )
#undef DATA_SOURCE_DECL_

#endif
