# tests/report.mk: 'memtrack report' end to end on JSON-lines fixtures with
# known figures.
TESTS += tests/test-report.sh
dist_noinst_SCRIPTS += tests/test-report.sh
EXTRA_DIST += $(srcdir)/tests/fixtures/report-a.jsonl \
	$(srcdir)/tests/fixtures/report-b.jsonl
