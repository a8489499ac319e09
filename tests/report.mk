# tests/report.mk: 'memtrack report' end to end on JSON-lines fixtures with
# known figures.
TESTS += tests/test-report.sh
dist_noinst_SCRIPTS += tests/test-report.sh
EXTRA_DIST += $(srcdir)/tests/fixtures/report-a.jsonl \
	$(srcdir)/tests/fixtures/report-b.jsonl

# 'memtrack report' on crafted, hostile recordings (tests/mkrec.py).
TESTS += tests/test-report-hostile.sh
dist_noinst_SCRIPTS += tests/test-report-hostile.sh
EXTRA_DIST += tests/mkrec.py

# report/sym-maps.c, the mappings of the symbolizer, against a model.
if HAVE_CHECK
check_PROGRAMS += tests/test-sym-maps
TESTS += tests/test-sym-maps
tests_test_sym_maps_SOURCES = tests/test-sym-maps.c
tests_test_sym_maps_CFLAGS = $(TEST_CFLAGS)
tests_test_sym_maps_LDADD = report/libmtreport.la $(TEST_LIBS)
endif
