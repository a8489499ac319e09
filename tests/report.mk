# tests/report.mk: 'memtrack report' end to end on JSON-lines fixtures with
# known figures.
TESTS += tests/test-report.sh
dist_noinst_SCRIPTS += tests/test-report.sh
EXTRA_DIST += $(srcdir)/tests/fixtures/report-a.jsonl \
	$(srcdir)/tests/fixtures/report-b.jsonl

# tests/test-report-html.sh: the html page in a real browser (chromium,
# headless: no script error, zoom, search) and the svg's height, on a
# preload recording of tests/progs/flame-shape
check_PROGRAMS += tests/progs/flame-shape
tests_progs_flame_shape_SOURCES = tests/progs/flame-shape.c
tests_progs_flame_shape_CFLAGS = $(WARN_CFLAGS) -O2 -fno-builtin
TESTS += tests/test-report-html.sh
dist_noinst_SCRIPTS += tests/test-report-html.sh
# and its views (trees, flame graphs by figure, the time selection) on
# tests/progs/phases
check_PROGRAMS += tests/progs/phases
tests_progs_phases_SOURCES = tests/progs/phases.c tests/progs/chain.h
tests_progs_phases_CFLAGS = $(WARN_CFLAGS) -O2 -g -fno-builtin
# and its search, on a frame whose name holds a ';' (tests/progs/odd-file)
check_PROGRAMS += tests/progs/odd-file
tests_progs_odd_file_SOURCES = tests/progs/odd-file.c tests/progs/chain.h
tests_progs_odd_file_CFLAGS = $(WARN_CFLAGS) -O2 -g -fno-builtin

# tests/test-report.sh: whole frame names (issue 29), two C++ template
# instantiations named alike for 140 bytes, put in recordings by
# tests/mkrec.py and recorded live; -g for the file and line
check_PROGRAMS += tests/progs/long-names
tests_progs_long_names_SOURCES = tests/progs/long-names.cc
tests_progs_long_names_CXXFLAGS = -std=c++17 -g -fno-builtin -Wall

# tests/test-report.sh: sites named past their allocator wrappers
check_PROGRAMS += tests/progs/alloc-wrappers
tests_progs_alloc_wrappers_SOURCES = tests/progs/alloc-wrappers.c
tests_progs_alloc_wrappers_CFLAGS = $(WARN_CFLAGS) -g

# tests/test-report.sh: a jq-like program recorded live, its sites named
# by the callers of its one allocator wrapper, each told apart
check_PROGRAMS += tests/progs/jq-like
tests_progs_jq_like_SOURCES = tests/progs/jq-like.c
tests_progs_jq_like_CFLAGS = $(WARN_CFLAGS) -O2 -g -fno-builtin

# tests/test-report.sh: the stack lines (--stack-lines) of the text report,
# the text --diff and the html's top sites, two sites told apart by their
# sixth caller; tests/test-report-html.sh: their 1000 allocations each, in
# units in the browser
check_PROGRAMS += tests/progs/deep-sites
tests_progs_deep_sites_SOURCES = tests/progs/deep-sites.c tests/progs/chain.h
tests_progs_deep_sites_CFLAGS = $(WARN_CFLAGS) -O2 -g -fno-builtin \
	-fomit-frame-pointer

# the metadata parsers of the report on hand-made payloads (fuzz regressions)
check_PROGRAMS += tests/test-symbolize
TESTS += tests/test-symbolize
tests_test_symbolize_SOURCES = tests/test-symbolize.c
tests_test_symbolize_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/report
tests_test_symbolize_CFLAGS = $(TEST_CFLAGS)
tests_test_symbolize_LDADD = report/libmtreport.la $(TEST_LIBS)

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
