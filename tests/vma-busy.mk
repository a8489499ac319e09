# tests/vma-busy: an executable mapping BPF cannot look up (its mmap lock
# busy) still stops its process until its uprobes are attached (skips
# without root and BPF).
check_PROGRAMS += tests/progs/vma-busy
tests_progs_vma_busy_SOURCES = tests/progs/vma-busy.c
tests_progs_vma_busy_LDADD = $(PTHREAD_LIBS)
if ENABLE_EBPF
TESTS += tests/test-vma-busy.sh
endif
dist_noinst_SCRIPTS += tests/test-vma-busy.sh

# tests/test-scope-race.sh: a remover of the shared uprobe events beside a
# memtrack making its own takes none of them (vma-busy and libdlalloc)
if ENABLE_EBPF
TESTS += tests/test-scope-race.sh
endif
dist_noinst_SCRIPTS += tests/test-scope-race.sh
