# plugins/msgpack-zstd: the CodSpeed memtrack format (MessagePack in zstd).
# Built as plugins/encoder-msgpack-zstd.la so the .so lands in plugins/.libs
# with every other plugin (the tests' MEMTRACK_PLUGIN_PATH).
plugin_LTLIBRARIES += plugins/encoder-msgpack-zstd.la
plugins_encoder_msgpack_zstd_la_SOURCES = \
	plugins/msgpack-zstd/encoder.c \
	plugins/msgpack-zstd/decoder.c \
	plugins/msgpack-zstd/msgpack.c \
	plugins/msgpack-zstd/msgpack.h \
	plugins/msgpack-zstd/internal.h
plugins_encoder_msgpack_zstd_la_CFLAGS = $(MT_MODULE_CFLAGS) $(ZSTD_CFLAGS)
plugins_encoder_msgpack_zstd_la_LDFLAGS = $(MT_MODULE_FLAGS)
plugins_encoder_msgpack_zstd_la_LIBADD = $(ZSTD_LIBS)
