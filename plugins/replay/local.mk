plugin_LTLIBRARIES += plugins/source-replay.la
plugins_source_replay_la_SOURCES = plugins/replay/source.c \
	plugins/replay/json-event.c plugins/replay/json-event.h
plugins_source_replay_la_CFLAGS = $(MT_MODULE_CFLAGS)
plugins_source_replay_la_LDFLAGS = $(MT_MODULE_FLAGS)
