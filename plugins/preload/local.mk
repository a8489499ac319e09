# plugins/preload: the preload source and the interposer it puts in the
# command's LD_PRELOAD (installed in pkglibdir, found next to the plugin in
# the build tree).
PRELOAD_COMMON = plugins/preload/shm.h plugins/preload/ring.c \
	plugins/preload/ring.h plugins/preload/execcheck.c \
	plugins/preload/execcheck.h plugins/preload/tsc.c plugins/preload/tsc.h

EXTRA_DIST += plugins/preload/syscalls.bpf.c

plugin_LTLIBRARIES += plugins/source-preload.la
plugins_source_preload_la_SOURCES = plugins/preload/source.c $(PRELOAD_COMMON) \
	plugins/preload/meta.c plugins/preload/meta.h \
	plugins/preload/syscalls.c plugins/preload/syscalls.h \
	plugins/preload/detacher.c plugins/preload/detacher.h \
	plugins/preload/pidns.c plugins/preload/pidns.h \
	plugins/preload/preload-path.c plugins/preload/preload-path.h \
	plugins/preload/selfdeps.c plugins/preload/selfdeps.h
plugins_source_preload_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DMT_PRELOAD_LIBDIR='"$(pkglibdir)"'
plugins_source_preload_la_CFLAGS = $(MT_MODULE_CFLAGS)
plugins_source_preload_la_LDFLAGS = $(MT_MODULE_FLAGS)
plugins_source_preload_la_LIBADD = -ldl

if ENABLE_EBPF
# Root mode (syscalls=auto|bpf): the eBPF source's syscall tracepoints
# (common/bpf/syscall-events.bpf.h) in a program of our own, built as the
# eBPF source's (plugins/ebpf/local.mk: BPF_CFLAGS, vmlinux.h) into
# plugins/preload/syscalls.skel.h. Without eBPF only syscalls=libc exists.
plugins/preload/syscalls.bpf.o: plugins/preload/syscalls.bpf.c \
		plugins/ebpf/vmlinux.h plugins/ebpf/bpf-include/stdint.h \
		include/memtrack/event.h $(BPF_COMMON_H) \
		plugins/preload/selfmap.h
	$(AM_V_CC)$(MKDIR_P) plugins/preload && \
	$(CLANG) $(BPF_CFLAGS) -c $(srcdir)/plugins/preload/syscalls.bpf.c -o $@

plugins/preload/syscalls.skel.h: plugins/preload/syscalls.bpf.o
	$(AM_V_GEN)$(BPFTOOL) gen skeleton $< name syscalls_bpf > $@.tmp && \
	mv $@.tmp $@

BUILT_SOURCES += plugins/preload/syscalls.skel.h
CLEANFILES += plugins/preload/syscalls.bpf.o plugins/preload/syscalls.skel.h
nodist_plugins_source_preload_la_SOURCES = plugins/preload/syscalls.skel.h
$(plugins_source_preload_la_OBJECTS): plugins/preload/syscalls.skel.h
plugins_source_preload_la_CPPFLAGS += -DMT_PRELOAD_BPF \
	-I$(top_builddir)/plugins/preload
plugins_source_preload_la_CFLAGS += $(LIBBPF_CFLAGS)
plugins_source_preload_la_LIBADD += $(LIBBPF_LIBS)
endif
# the eBPF source's checks (root, BTF, tracefs)
plugins_source_preload_la_SOURCES += common/bpf-check.c common/bpf-check.h
# byte counts in the args, as the eBPF source reads them
plugins_source_preload_la_SOURCES += common/parse-size.c common/parse-size.h

# Not a plugin (no entry point): the hooks are its only exported symbols.
# -fexceptions: the real operator new may throw through our wrapper.
pkglib_LTLIBRARIES = plugins/preload/libmemtrack-preload.la
plugins_preload_libmemtrack_preload_la_SOURCES = plugins/preload/interpose.c \
	plugins/preload/hooks.def $(PRELOAD_COMMON) \
	plugins/preload/interpose-stacks.c plugins/preload/interpose-stacks.h \
	plugins/preload/meta.h plugins/preload/selfdeps.c plugins/preload/selfdeps.h \
	plugins/preload/ownmalloc.c plugins/preload/ownmalloc.h
plugins_preload_libmemtrack_preload_la_CFLAGS = $(AM_CFLAGS) \
	-fvisibility=hidden -fexceptions -fno-builtin
plugins_preload_libmemtrack_preload_la_LDFLAGS = -module -avoid-version \
	-shared
# --stacks: libunwind is opened (RTLD_LOCAL) only with stacks on
plugins_preload_libmemtrack_preload_la_LIBADD = \
	plugins/preload/libmtpl-stacks.la -ldl
