# plugins/ebpf: the eBPF source (see bpf/ for the BPF side).
EXTRA_DIST += plugins/ebpf/ebpf.h

if ENABLE_EBPF
plugin_LTLIBRARIES += plugins/source-ebpf.la
plugins_source_ebpf_la_SOURCES = plugins/ebpf/source.c plugins/ebpf/attach.c \
	core/elf-build-id.c core/elf-build-id.h \
	plugins/ebpf/watchdog.c plugins/ebpf/stacks.c plugins/ebpf/ebpf.h
nodist_plugins_source_ebpf_la_SOURCES = bpf/memtrack.skel.h
# the skeleton is generated: the plugin's objects wait for it even when
# the plugin is the only goal (BUILT_SOURCES covers 'all' and 'check')
$(plugins_source_ebpf_la_OBJECTS): bpf/memtrack.skel.h
plugins_source_ebpf_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_builddir)/bpf \
	-I$(top_srcdir)/bpf
plugins_source_ebpf_la_CFLAGS = $(MT_MODULE_CFLAGS) $(LIBBPF_CFLAGS) \
	-I$(top_srcdir)/core \
	$(LIBELF_CFLAGS)
plugins_source_ebpf_la_LDFLAGS = $(MT_MODULE_FLAGS)
plugins_source_ebpf_la_LIBADD = $(LIBBPF_LIBS) $(LIBELF_LIBS)
endif
