# tests/ebpf-scope: the eBPF source's uprobes trap in the traced tree only
# (plugins/ebpf/scope.c; skips without root and BPF).
check_PROGRAMS += tests/progs/peek-malloc
tests_progs_peek_malloc_SOURCES = tests/progs/peek-malloc.c
if ENABLE_EBPF
TESTS += tests/test-ebpf-scope.sh
endif
dist_noinst_SCRIPTS += tests/test-ebpf-scope.sh
