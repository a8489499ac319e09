# tests/pipeline: the batch pipeline with an in-test encoder and sink.
if HAVE_CHECK
check_PROGRAMS += tests/test-pipeline
TESTS += tests/test-pipeline
tests_test_pipeline_SOURCES = tests/test-pipeline.c
tests_test_pipeline_CFLAGS = $(TEST_CFLAGS)
tests_test_pipeline_LDADD = host/libmthost.la $(TEST_LIBS)
endif
