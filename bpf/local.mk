# bpf
