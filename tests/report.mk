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
