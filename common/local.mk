# common: the little that the host, the report and the plugins share (ELF
# build-ids and symbol tables, a growable array). A convenience library with
# no dependency on host/ or report/, so a plugin can link it.
noinst_LTLIBRARIES += common/libmtcommon.la
common_libmtcommon_la_SOURCES = \
	common/array.c common/array.h common/key-index.c common/key-index.h \
	common/elf-build-id.c common/elf-build-id.h common/elf-notes.h \
	common/elf-symbols.c common/elf-symbols.h \
	common/bpf-check.c common/bpf-check.h \
	common/parse-size.c common/parse-size.h \
	common/open-regular.c common/open-regular.h \
	common/proc-path.c common/proc-path.h \
	common/event-finish.h common/kernel-dev.h common/bpf-test-knobs.h \
	common/interposer-path.h common/stack-ids.h common/sample-draw.h \
	common/gate-ask.h
common_libmtcommon_la_CFLAGS = $(AM_CFLAGS) $(LIBELF_CFLAGS)
common_libmtcommon_la_LIBADD = $(LIBELF_LIBS)
