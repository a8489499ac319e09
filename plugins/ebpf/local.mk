# plugins/ebpf: the eBPF source, laid out as libbpf-tools do: the BPF
# program (memtrack.bpf.c), the header it shares with user space
# (memtrack.h), the user-space .c files, and x86/vmlinux.h for kernels
# without BTF. The BPF program becomes a libbpf skeleton
# (plugins/ebpf/memtrack.skel.h, in the build tree) that the plugin includes.
EXTRA_DIST += plugins/ebpf/README.md plugins/ebpf/memtrack.bpf.c \
	plugins/ebpf/memtrack.h plugins/ebpf/x86/vmlinux.h \
	plugins/ebpf/bpf-include/stdint.h plugins/ebpf/ebpf.h \
	common/bpf/syscall-call.bpf.h common/bpf/syscall-events.bpf.h

if ENABLE_EBPF
# bpf-include/ first: its <stdint.h> takes the types from vmlinux.h, so the
# BPF program includes <memtrack/event.h> like every plugin.
BPF_CFLAGS = -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_x86 \
	-I$(top_srcdir)/plugins/ebpf/bpf-include \
	-I$(top_builddir)/plugins/ebpf -I$(top_srcdir)/plugins/ebpf \
	-I$(top_srcdir)/include -I$(top_srcdir)/common
BPF_COMMON_H = common/bpf/syscall-call.bpf.h common/bpf/syscall-events.bpf.h

# vmlinux.h: the running kernel's types when it has BTF, else the copy
# checked in (CO-RE relocates either at load time).
plugins/ebpf/vmlinux.h:
	$(AM_V_GEN)$(MKDIR_P) plugins/ebpf && \
	if test -r /sys/kernel/btf/vmlinux; then \
		$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp; \
	else \
		cp $(srcdir)/plugins/ebpf/x86/vmlinux.h $@.tmp; \
	fi && mv $@.tmp $@

plugins/ebpf/memtrack.bpf.o: plugins/ebpf/memtrack.bpf.c \
		plugins/ebpf/memtrack.h plugins/ebpf/vmlinux.h \
		plugins/ebpf/bpf-include/stdint.h include/memtrack/event.h \
		$(BPF_COMMON_H)
	$(AM_V_CC)$(MKDIR_P) plugins/ebpf && \
	$(CLANG) $(BPF_CFLAGS) -c $(srcdir)/plugins/ebpf/memtrack.bpf.c -o $@

plugins/ebpf/memtrack.skel.h: plugins/ebpf/memtrack.bpf.o
	$(AM_V_GEN)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

BUILT_SOURCES += plugins/ebpf/memtrack.skel.h
CLEANFILES += plugins/ebpf/vmlinux.h plugins/ebpf/memtrack.bpf.o \
	plugins/ebpf/memtrack.skel.h

plugin_LTLIBRARIES += plugins/source-ebpf.la
plugins_source_ebpf_la_SOURCES = plugins/ebpf/source.c plugins/ebpf/args.c \
	plugins/ebpf/system.c plugins/ebpf/pressure.c plugins/ebpf/ring.c \
	plugins/ebpf/control.c \
	plugins/ebpf/attach.c plugins/ebpf/watchdog.c plugins/ebpf/stacks.c \
	plugins/ebpf/unwind.c plugins/ebpf/gate.c plugins/ebpf/freeze.c \
	plugins/ebpf/early.c \
	plugins/ebpf/scope.c plugins/ebpf/kbtf.c plugins/ebpf/kbtf.h \
	plugins/ebpf/sample.c plugins/ebpf/ebpf.h
nodist_plugins_source_ebpf_la_SOURCES = plugins/ebpf/memtrack.skel.h
# the skeleton is generated: the plugin's objects wait for it even when
# the plugin is the only goal (BUILT_SOURCES covers 'all' and 'check')
$(plugins_source_ebpf_la_OBJECTS): plugins/ebpf/memtrack.skel.h
# MT_PRELOAD_LIBDIR: where the interposer is installed, attached ahead
# under auto (attach.c: ebpf_preattach_start())
plugins_source_ebpf_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_builddir)/plugins/ebpf -DMT_PRELOAD_LIBDIR='"$(pkglibdir)"'
plugins_source_ebpf_la_CFLAGS = $(MT_MODULE_CFLAGS) $(LIBBPF_CFLAGS) \
	$(LIBELF_CFLAGS) $(LIBDW_CFLAGS) $(PTHREAD_CFLAGS)
plugins_source_ebpf_la_LDFLAGS = $(MT_MODULE_FLAGS)
plugins_source_ebpf_la_LIBADD = common/libmtcommon.la $(LIBBPF_LIBS) \
	$(LIBELF_LIBS) $(LIBDW_LIBS) $(PTHREAD_LIBS)
endif
