# tests/encoder: the msgpack-zstd plugin (plugins/msgpack-zstd).
# test-encoder dlopen()s plugins/.libs/encoder-msgpack-zstd.so like the host
# and compiles the internal serializer in to check raw msgpack bytes.
if HAVE_CHECK
check_PROGRAMS += tests/test-encoder
TESTS += tests/test-encoder
tests_test_encoder_SOURCES = tests/test-encoder.c \
	tests/test-encoder-util.c tests/test-encoder-util.h \
	$(MSGPACK_SOURCES)
tests_test_encoder_CFLAGS = $(TEST_CFLAGS) $(ZSTD_CFLAGS) \
	-I$(top_srcdir)/plugins/msgpack-zstd
tests_test_encoder_LDADD = $(TEST_LIBS) $(ZSTD_LIBS) -ldl $(PTHREAD_LIBS)
endif

# Cross-check with the Python reference modules (skips without them).
check_PROGRAMS += tests/test-encoder-write
tests_test_encoder_write_SOURCES = tests/test-encoder-write.c \
	tests/test-encoder-util.c tests/test-encoder-util.h
tests_test_encoder_write_LDADD = -ldl
TESTS += tests/test-python-decode.sh
dist_noinst_SCRIPTS += tests/test-python-decode.sh tests/test-python-decode.py
