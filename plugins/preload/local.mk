# plugins/preload: two programs on either side of a trust boundary.
#   interposer/  libmemtrack-preload.so, put in the command's LD_PRELOAD:
#                it runs inside every traced process (installed in
#                pkglibdir, found next to the plugin in the build tree)
#   source/      the source plugin, in memtrack: it reads what they wrote
#   ./           what both are built from: the layout of the shared memory
#                (shm.h), the ring's protocol (ring.h), the metadata chunk
#                codec (meta-chunk.h), and the units both sides run
#                (execcheck, tsc, selfdeps, selfmap.h)
# Each program sees only its own folder and this one (-I below).
PRELOAD_COMMON = plugins/preload/shm.h plugins/preload/ring.h \
	plugins/preload/meta-chunk.h plugins/preload/execcheck.c \
	plugins/preload/execcheck.h plugins/preload/tsc.c plugins/preload/tsc.h \
	plugins/preload/selfdeps.c plugins/preload/selfdeps.h
PRELOAD_SOURCE_CPPFLAGS = -I$(srcdir)/plugins/preload/source \
	-I$(srcdir)/plugins/preload
PRELOAD_INTERPOSER_CPPFLAGS = -I$(srcdir)/plugins/preload/interposer \
	-I$(srcdir)/common \
	-I$(srcdir)/plugins/preload

EXTRA_DIST += plugins/preload/source/syscalls.bpf.c

plugin_LTLIBRARIES += plugins/source-preload.la
plugins_source_preload_la_SOURCES = plugins/preload/source/source.c \
	$(PRELOAD_COMMON) \
	plugins/preload/source/ring-read.c plugins/preload/source/ring-read.h \
	plugins/preload/source/meta.c plugins/preload/source/meta.h \
	plugins/preload/source/syscalls.c plugins/preload/source/syscalls.h \
	plugins/preload/source/detacher.c plugins/preload/source/detacher.h \
	plugins/preload/source/pidns.c plugins/preload/source/pidns.h \
	plugins/preload/source/preload-path.c \
	plugins/preload/source/preload-path.h
plugins_source_preload_la_CPPFLAGS = $(AM_CPPFLAGS) \
	$(PRELOAD_SOURCE_CPPFLAGS) -DMT_PRELOAD_LIBDIR='"$(pkglibdir)"'
plugins_source_preload_la_CFLAGS = $(MT_MODULE_CFLAGS)
plugins_source_preload_la_LDFLAGS = $(MT_MODULE_FLAGS)
plugins_source_preload_la_LIBADD = -ldl

if ENABLE_EBPF
# Root mode (syscalls=auto|bpf): the eBPF source's syscall tracepoints
# (common/bpf/syscall-events.bpf.h) in a program of our own, built as the
# eBPF source's (plugins/ebpf/local.mk: BPF_CFLAGS, vmlinux.h) into
# plugins/preload/source/syscalls.skel.h. Without eBPF only syscalls=libc
# exists.
plugins/preload/source/syscalls.bpf.o: \
		plugins/preload/source/syscalls.bpf.c \
		plugins/ebpf/vmlinux.h plugins/ebpf/bpf-include/stdint.h \
		include/memtrack/event.h $(BPF_COMMON_H) \
		plugins/preload/selfmap.h
	$(AM_V_CC)$(MKDIR_P) plugins/preload/source && \
	$(CLANG) $(BPF_CFLAGS) -I$(srcdir)/plugins/preload \
		-c $(srcdir)/plugins/preload/source/syscalls.bpf.c -o $@

plugins/preload/source/syscalls.skel.h: plugins/preload/source/syscalls.bpf.o
	$(AM_V_GEN)$(BPFTOOL) gen skeleton $< name syscalls_bpf > $@.tmp && \
	mv $@.tmp $@

# The same object as a light skeleton: the kernel loads and relocates it
# (source/syscalls.c, "Loading": ~13 ms against libbpf's ~30).
plugins/preload/source/syscalls.lskel.h: plugins/preload/source/syscalls.bpf.o
	$(AM_V_GEN)$(BPFTOOL) gen skeleton -L $< name syscalls > $@.tmp && \
	mv $@.tmp $@

BUILT_SOURCES += plugins/preload/source/syscalls.skel.h \
	plugins/preload/source/syscalls.lskel.h
CLEANFILES += plugins/preload/source/syscalls.bpf.o \
	plugins/preload/source/syscalls.skel.h \
	plugins/preload/source/syscalls.lskel.h
nodist_plugins_source_preload_la_SOURCES = \
	plugins/preload/source/syscalls.skel.h \
	plugins/preload/source/syscalls.lskel.h
$(plugins_source_preload_la_OBJECTS): plugins/preload/source/syscalls.skel.h \
	plugins/preload/source/syscalls.lskel.h
plugins_source_preload_la_CPPFLAGS += -DMT_PRELOAD_BPF \
	-I$(top_builddir)/plugins/preload/source
plugins_source_preload_la_CFLAGS += $(LIBBPF_CFLAGS)
plugins_source_preload_la_LIBADD += $(LIBBPF_LIBS)
endif
# the eBPF source's checks (root, BTF, tracefs)
plugins_source_preload_la_SOURCES += common/bpf-check.c common/bpf-check.h
# a path as a traced process sees it (the exec check it left to us)
plugins_source_preload_la_SOURCES += common/proc-path.c common/proc-path.h
# byte counts in the args, as the eBPF source reads them
plugins_source_preload_la_SOURCES += common/parse-size.c common/parse-size.h

# Not a plugin (no entry point): hooks of names every process has are its
# only exported symbols (those of optional allocators are bound into the
# objects that use them: interposer/optional.c).
# -fexceptions: the real operator new may throw through our wrapper.
# The library stays at plugins/preload/ (the source finds it there in the
# build tree, next to itself, and tests name it there); its code is in
# interposer/.
pkglib_LTLIBRARIES = plugins/preload/libmemtrack-preload.la
plugins_preload_libmemtrack_preload_la_SOURCES = \
	plugins/preload/interposer/interpose.c \
	plugins/preload/interposer/hooks.def $(PRELOAD_COMMON) \
	plugins/preload/interposer/ring-put.c \
	plugins/preload/interposer/ring-put.h \
	plugins/preload/interposer/interpose-stacks.c \
	plugins/preload/interposer/interpose-stacks.h \
	plugins/preload/interposer/optional.c \
	plugins/preload/interposer/optional.h \
	plugins/preload/interposer/addr-set.h \
	plugins/preload/interposer/ownmalloc.c \
	plugins/preload/interposer/sample.c \
	plugins/preload/interposer/sample.h \
	plugins/preload/interposer/ownmalloc.h
plugins_preload_libmemtrack_preload_la_CPPFLAGS = $(AM_CPPFLAGS) \
	$(PRELOAD_INTERPOSER_CPPFLAGS)
plugins_preload_libmemtrack_preload_la_CFLAGS = $(AM_CFLAGS) \
	-fvisibility=hidden -fexceptions -fno-builtin
plugins_preload_libmemtrack_preload_la_LDFLAGS = -module -avoid-version \
	-shared
# --stacks: libunwind is opened (RTLD_LOCAL) only with stacks on
plugins_preload_libmemtrack_preload_la_LIBADD = \
	plugins/preload/libmtpl-stacks.la -ldl
