plugin_LTLIBRARIES += plugins/sink-file.la
plugins_sink_file_la_SOURCES = plugins/file/sink.c \
	common/open-output.c common/open-output.h
plugins_sink_file_la_CFLAGS = $(MT_MODULE_CFLAGS)
plugins_sink_file_la_LDFLAGS = $(MT_MODULE_FLAGS)
