# tests/test-symbols.sh: frames named as a debugger names them (libdw),
# sites merged by what they name, a replayed --stacks recording, on
# tests/progs/sym-sites recorded with the preload source (no root needed).
# Built -g (and -fno-builtin: its malloc calls must stay calls); the user's
# -O applies, the test holds at any.
SYM_PROGS = tests/progs/sym-sites tests/progs/sym-sites-nopie
check_PROGRAMS += $(SYM_PROGS)
tests_progs_sym_sites_SOURCES = tests/progs/sym-sites.c
tests_progs_sym_sites_CFLAGS = $(AM_CFLAGS) -g -fno-builtin
tests_progs_sym_sites_nopie_SOURCES = tests/progs/sym-sites.c
tests_progs_sym_sites_nopie_CFLAGS = $(AM_CFLAGS) -g -fno-builtin -fno-pie
tests_progs_sym_sites_nopie_LDFLAGS = -no-pie
TESTS += tests/test-symbols.sh tests/test-pprof.sh
dist_noinst_SCRIPTS += tests/test-symbols.sh tests/test-pprof.sh
