# plugins/msgpack-zstd: the CodSpeed memtrack format (MessagePack in zstd).
# Built as plugins/encoder-msgpack-zstd.la so the .so lands in plugins/.libs
# with every other plugin (the tests' MEMTRACK_PLUGIN_PATH).
# The MessagePack layer, also compiled into tests and bench-write.
MSGPACK_SOURCES = plugins/msgpack-zstd/msgpack-write.c \
	plugins/msgpack-zstd/msgpack-read.c \
	plugins/msgpack-zstd/msgpack-read-fast.c \
	plugins/msgpack-zstd/msgpack.h
plugin_LTLIBRARIES += plugins/encoder-msgpack-zstd.la
plugins_encoder_msgpack_zstd_la_SOURCES = \
	plugins/msgpack-zstd/encoder.c \
	plugins/msgpack-zstd/decoder.c \
	$(MSGPACK_SOURCES) \
	plugins/msgpack-zstd/internal.h
plugins_encoder_msgpack_zstd_la_CFLAGS = $(MT_MODULE_CFLAGS) $(ZSTD_CFLAGS)
plugins_encoder_msgpack_zstd_la_LDFLAGS = $(MT_MODULE_FLAGS)
plugins_encoder_msgpack_zstd_la_LIBADD = $(ZSTD_LIBS)
