# Tests: Check programs run by automake's parallel harness.
# Exit 77 is a skip (no root or no BPF), 99 a hard error.
AM_TESTS_ENVIRONMENT = \
	MEMTRACK_PLUGIN_PATH='$(abs_top_builddir)/plugins/.libs'; export MEMTRACK_PLUGIN_PATH; \
	MT_TESTDATA='$(abs_top_srcdir)/tests/fixtures/codspeed-format'; export MT_TESTDATA; \
	MT_BUILDDIR='$(abs_top_builddir)'; export MT_BUILDDIR; \
	MT_SRCDIR='$(abs_top_srcdir)'; export MT_SRCDIR; \
	CC='$(CC)'; CXX='$(CXX)'; export CC CXX;

# Every test runs through run-test.sh: the BPF tests alone (see there).
LOG_COMPILER = $(SHELL) $(srcdir)/tests/run-test.sh
SH_LOG_COMPILER = $(SHELL) $(srcdir)/tests/run-test.sh $(SHELL)
EXTRA_DIST += tests/run-test.sh

TEST_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
TEST_LIBS = $(CHECK_LIBS)

include tests/host.mk
include tests/encoder.mk
include tests/pipeline.mk
include tests/ebpf.mk
include tests/report.mk
include tests/stacks.mk
include tests/inproc-stacks.mk
include tests/unwind.mk
include tests/preload.mk
include tests/sanitize.mk
include tests/symbols.mk
include tests/vma-busy.mk
include tests/ebpf-scope.mk

# Reference vectors of the CodSpeed memtrack format, copied verbatim from the
# reference implementation's output (see their README).
EXTRA_DIST += $(srcdir)/tests/fixtures/codspeed-format/README.md \
	$(srcdir)/tests/fixtures/codspeed-format/events.jsonl \
	$(srcdir)/tests/fixtures/codspeed-format/golden.mt \
	$(srcdir)/tests/fixtures/codspeed-format/golden.mt.3frames \
	$(srcdir)/tests/fixtures/codspeed-format/extended-keys-and-skippable-frames.mt

