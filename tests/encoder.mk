# tests/encoder: the msgpack-zstd plugin (plugins/msgpack-zstd). The tests
# dlopen() plugins/.libs/encoder-msgpack-zstd.so like the host and compile
# its MessagePack layer in to check raw msgpack bytes.
if HAVE_CHECK
# three programs, one unit each: the MessagePack layer, the encoder, the
# decoder; they share codec-testlib.c (vectors, decode into memory, random
# events)
CODEC_TEST_SOURCES = tests/codec-testlib.c tests/codec-testlib.h \
	tests/test-encoder-util.c tests/test-encoder-util.h \
	$(MSGPACK_SOURCES)
CODEC_TEST_CFLAGS = $(TEST_CFLAGS) $(ZSTD_CFLAGS) \
	-I$(top_srcdir)/plugins/msgpack-zstd
CODEC_TEST_LIBS = $(TEST_LIBS) $(ZSTD_LIBS) -ldl $(PTHREAD_LIBS)

check_PROGRAMS += tests/test-msgpack tests/test-encoder tests/test-decoder
TESTS += tests/test-msgpack tests/test-encoder tests/test-decoder
tests_test_msgpack_SOURCES = tests/test-msgpack.c $(CODEC_TEST_SOURCES)
tests_test_msgpack_CFLAGS = $(CODEC_TEST_CFLAGS)
tests_test_msgpack_LDADD = $(CODEC_TEST_LIBS)
tests_test_encoder_SOURCES = tests/test-encoder.c $(CODEC_TEST_SOURCES)
tests_test_encoder_CFLAGS = $(CODEC_TEST_CFLAGS)
tests_test_encoder_LDADD = $(CODEC_TEST_LIBS)
tests_test_decoder_SOURCES = tests/test-decoder.c $(CODEC_TEST_SOURCES)
tests_test_decoder_CFLAGS = $(CODEC_TEST_CFLAGS)
tests_test_decoder_LDADD = $(CODEC_TEST_LIBS)
endif

# Cross-check with the Python reference modules (skips without them).
check_PROGRAMS += tests/test-encoder-write
tests_test_encoder_write_SOURCES = tests/test-encoder-write.c \
	tests/test-encoder-util.c tests/test-encoder-util.h
tests_test_encoder_write_LDADD = -ldl
TESTS += tests/test-python-decode.sh
dist_noinst_SCRIPTS += tests/test-python-decode.sh tests/test-python-decode.py
