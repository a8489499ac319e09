# bpf: the BPF programs of the eBPF source, compiled with clang and turned
# into a libbpf skeleton (bpf/memtrack.skel.h, in the build tree) that the
# plugin includes.
EXTRA_DIST += bpf/README.md bpf/memtrack.bpf.c bpf/memtrack.h bpf/null.bpf.c \
	bpf/vmlinux/x86/vmlinux.h

if ENABLE_EBPF
BPF_CFLAGS = -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_x86 \
	-I$(builddir)/bpf -I$(srcdir)/bpf

# vmlinux.h: the running kernel's types when it has BTF, else the copy
# checked in (CO-RE relocates either at load time).
bpf/vmlinux.h:
	$(AM_V_GEN)$(MKDIR_P) bpf && \
	if test -r /sys/kernel/btf/vmlinux; then \
		$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp; \
	else \
		cp $(srcdir)/bpf/vmlinux/x86/vmlinux.h $@.tmp; \
	fi && mv $@.tmp $@

bpf/memtrack.bpf.o: bpf/memtrack.bpf.c bpf/memtrack.h bpf/vmlinux.h
	$(AM_V_CC)$(MKDIR_P) bpf && \
	$(CLANG) $(BPF_CFLAGS) -c $(srcdir)/bpf/memtrack.bpf.c -o $@

bpf/memtrack.skel.h: bpf/memtrack.bpf.o
	$(AM_V_GEN)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

# do-nothing programs for bench/bench-ebpf (built by 'make bench' only)
bpf/null.bpf.o: bpf/null.bpf.c bpf/vmlinux.h
	$(AM_V_CC)$(MKDIR_P) bpf && \
	$(CLANG) $(BPF_CFLAGS) -c $(srcdir)/bpf/null.bpf.c -o $@

bpf/null.skel.h: bpf/null.bpf.o
	$(AM_V_GEN)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

BUILT_SOURCES += bpf/memtrack.skel.h
CLEANFILES += bpf/vmlinux.h bpf/memtrack.bpf.o bpf/memtrack.skel.h \
	bpf/null.bpf.o bpf/null.skel.h
endif
