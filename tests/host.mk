# Host tests: plugin loading and the command line.

# common/key-index, the eBPF source's index of files and processes
check_PROGRAMS += tests/test-key-index
TESTS += tests/test-key-index
tests_test_key_index_SOURCES = tests/test-key-index.c
tests_test_key_index_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/common
tests_test_key_index_CFLAGS = $(TEST_CFLAGS)
tests_test_key_index_LDADD = common/libmtcommon.la $(TEST_LIBS)

# Plugins that must be refused, each for its own reason. -rpath makes
# libtool build shared objects for these check-only modules.
FIXTURE_FLAGS = -module -avoid-version -shared -rpath /nowhere
check_LTLIBRARIES += \
	tests/fixtures/encoder-bad-major.la \
	tests/fixtures/encoder-newer-minor.la \
	tests/fixtures/encoder-no-entry.la \
	tests/fixtures/encoder-unresolved.la
tests_fixtures_encoder_bad_major_la_SOURCES = tests/fixtures/plugin-fixtures.c
tests_fixtures_encoder_bad_major_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_BAD_MAJOR
tests_fixtures_encoder_bad_major_la_LDFLAGS = $(FIXTURE_FLAGS)
tests_fixtures_encoder_newer_minor_la_SOURCES = tests/fixtures/plugin-fixtures.c
tests_fixtures_encoder_newer_minor_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_NEWER_MINOR
tests_fixtures_encoder_newer_minor_la_LDFLAGS = $(FIXTURE_FLAGS)
tests_fixtures_encoder_no_entry_la_SOURCES = tests/fixtures/plugin-fixtures.c
tests_fixtures_encoder_no_entry_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_NO_ENTRY
tests_fixtures_encoder_no_entry_la_LDFLAGS = $(FIXTURE_FLAGS)
tests_fixtures_encoder_unresolved_la_SOURCES = tests/fixtures/plugin-fixtures.c
tests_fixtures_encoder_unresolved_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_UNRESOLVED
tests_fixtures_encoder_unresolved_la_LDFLAGS = $(FIXTURE_FLAGS)
# ABI 1.1: a field past the host's struct (set: refused; zero: loads), a
# name outside [a-z0-9-]
check_LTLIBRARIES += \
	tests/fixtures/encoder-ops-tail-set.la \
	tests/fixtures/encoder-ops-tail-zero.la \
	tests/fixtures/encoder-desc-tail-set.la \
	tests/fixtures/encoder-under-score.la
tests_fixtures_encoder_ops_tail_set_la_SOURCES = tests/fixtures/plugin-fixtures.c
tests_fixtures_encoder_ops_tail_set_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_OPS_TAIL_SET
tests_fixtures_encoder_ops_tail_set_la_LDFLAGS = $(FIXTURE_FLAGS)
tests_fixtures_encoder_ops_tail_zero_la_SOURCES = tests/fixtures/plugin-fixtures.c
tests_fixtures_encoder_ops_tail_zero_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_OPS_TAIL_ZERO
tests_fixtures_encoder_ops_tail_zero_la_LDFLAGS = $(FIXTURE_FLAGS)
tests_fixtures_encoder_desc_tail_set_la_SOURCES = tests/fixtures/plugin-fixtures.c
tests_fixtures_encoder_desc_tail_set_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DESC_TAIL_SET
tests_fixtures_encoder_desc_tail_set_la_LDFLAGS = $(FIXTURE_FLAGS)
tests_fixtures_encoder_under_score_la_SOURCES = tests/fixtures/plugin-fixtures.c
tests_fixtures_encoder_under_score_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_UNDERSCORE
tests_fixtures_encoder_under_score_la_LDFLAGS = $(FIXTURE_FLAGS)

# Plugins that fail without saying why: the host names them (test-cli.sh).
check_LTLIBRARIES += tests/fixtures/source-silent.la \
	tests/fixtures/encoder-silent.la tests/fixtures/sink-silent.la
tests_fixtures_source_silent_la_SOURCES = tests/fixtures/silent.c
tests_fixtures_source_silent_la_CPPFLAGS = $(AM_CPPFLAGS) -DSILENT_SOURCE
tests_fixtures_source_silent_la_LDFLAGS = $(FIXTURE_FLAGS)
tests_fixtures_encoder_silent_la_SOURCES = tests/fixtures/silent.c
tests_fixtures_encoder_silent_la_CPPFLAGS = $(AM_CPPFLAGS) -DSILENT_ENCODER
tests_fixtures_encoder_silent_la_LDFLAGS = $(FIXTURE_FLAGS)
tests_fixtures_sink_silent_la_SOURCES = tests/fixtures/silent.c
tests_fixtures_sink_silent_la_CPPFLAGS = $(AM_CPPFLAGS) -DSILENT_SINK
tests_fixtures_sink_silent_la_LDFLAGS = $(FIXTURE_FLAGS)

if HAVE_CHECK
check_PROGRAMS += tests/test-plugin-loader
TESTS += tests/test-plugin-loader
tests_test_plugin_loader_SOURCES = tests/test-plugin-loader.c
tests_test_plugin_loader_CFLAGS = $(TEST_CFLAGS)
tests_test_plugin_loader_LDADD = host/libmthost.la $(TEST_LIBS)
endif

TESTS += tests/test-cli.sh
dist_noinst_SCRIPTS += tests/test-cli.sh
# The sink's file and --stats=FILE: no symlink, FIFO or directory (issue 27)
TESTS += tests/test-output-file.sh
dist_noinst_SCRIPTS += tests/test-output-file.sh
EXTRA_DIST += tests/lib.sh

# The lifecycle with the eBPF source (skips without root and BPF).
if ENABLE_EBPF
TESTS += tests/test-lifecycle.sh
endif
dist_noinst_SCRIPTS += tests/test-lifecycle.sh

# Processes killed at any moment of their attach, SIGTERM to memtrack in
# the middle: never an error of memtrack's (skips without root and BPF).
check_PROGRAMS += tests/progs/spawn-kill
tests_progs_spawn_kill_SOURCES = tests/progs/spawn-kill.c
if ENABLE_EBPF
TESTS += tests/test-stress.sh
endif
dist_noinst_SCRIPTS += tests/test-stress.sh

# A tree larger than the BPF map of processes: said, exit 1 (skips
# without root and BPF).
if ENABLE_EBPF
TESTS += tests/test-untracked.sh
endif
dist_noinst_SCRIPTS += tests/test-untracked.sh

# ABI 1.1 from C++: the headers, and the C++ example encoder built and run
TESTS += tests/test-cxx-plugin.sh
dist_noinst_SCRIPTS += tests/test-cxx-plugin.sh

# A failed create()/open() is not followed by destroy()/close()
check_LTLIBRARIES += tests/fixtures/source-fail-create.la \
	tests/fixtures/encoder-fail-create.la tests/fixtures/sink-fail-open.la
tests_fixtures_source_fail_create_la_SOURCES = tests/fixtures/fail-create.c
tests_fixtures_source_fail_create_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_SOURCE
tests_fixtures_source_fail_create_la_LDFLAGS = $(FIXTURE_FLAGS)
tests_fixtures_encoder_fail_create_la_SOURCES = tests/fixtures/fail-create.c
tests_fixtures_encoder_fail_create_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_ENCODER
tests_fixtures_encoder_fail_create_la_LDFLAGS = $(FIXTURE_FLAGS)
tests_fixtures_sink_fail_open_la_SOURCES = tests/fixtures/fail-create.c
tests_fixtures_sink_fail_open_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_SINK
tests_fixtures_sink_fail_open_la_LDFLAGS = $(FIXTURE_FLAGS)
TESTS += tests/test-plugin-contracts.sh
dist_noinst_SCRIPTS += tests/test-plugin-contracts.sh

# Issue 28, item 5: one run per control socket path (the preload source)
TESTS += tests/test-control-path.sh
dist_noinst_SCRIPTS += tests/test-control-path.sh

# Issue 28, items 3 and 4: Ctrl-C, SIGTERM and SIGHUP at any moment of
# start-up give 128+N and a valid file, never SIGPIPE; a signal reaches
# the command once, sent to memtrack alone or to the group. The preload
# source always, ebpf with root and BPF.
check_PROGRAMS += tests/progs/sig-count
tests_progs_sig_count_SOURCES = tests/progs/sig-count.c
TESTS += tests/test-startup-signals.sh tests/test-group-signals.sh
dist_noinst_SCRIPTS += tests/test-startup-signals.sh \
	tests/test-group-signals.sh

# memtrack as the init of a pid namespace (a container), each source
# (root; skips without root and BPF)
if ENABLE_EBPF
TESTS += tests/test-container.sh
endif
dist_noinst_SCRIPTS += tests/test-container.sh
