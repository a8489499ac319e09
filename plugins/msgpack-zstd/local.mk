# plugins/msgpack-zstd
