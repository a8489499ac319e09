# fuzz/make-seeds.py TOP [RECORDING.mt...]: (re)make the seed corpora of
# fuzz/corpus/ from the format fixtures and recordings made with memtrack
# (run with /usr/bin/python3: it needs python3-zstandard).
import os, struct, sys, zstandard
top = sys.argv[1]; recs = sys.argv[2:]
out = os.path.join(top, 'fuzz/corpus')
fix = os.path.join(top, 'tests/fixtures/codspeed-format')
mts = [os.path.join(fix, f) for f in ('golden.mt', 'golden.mt.3frames', 'extended-keys-and-skippable-frames.mt')] + recs

def put(target, data, name):
    d = os.path.join(out, target); os.makedirs(d, exist_ok=True)
    open(os.path.join(d, name), 'wb').write(data)

def frames(raw):
    """(kind, payload) of each frame: 'z' decompressed data, 's' skippable payload"""
    at = 0; res = []
    while at + 8 <= len(raw):
        magic, = struct.unpack_from('<I', raw, at)
        if magic & 0xFFFFFFF0 == 0x184D2A50:
            n, = struct.unpack_from('<I', raw, at + 4)
            res.append(('s', raw[at + 8:at + 8 + n])); at += 8 + n
        else:
            d = zstandard.ZstdDecompressor().decompressobj()
            data = d.decompress(raw[at:])
            res.append(('z', data))
            at = len(raw) - len(d.unused_data)
    return res

for path in mts:
    base = os.path.basename(path).replace('.', '-')
    raw = open(path, 'rb').read()
    fr = frames(raw)
    msgpack = b''.join(p for k, p in fr if k == 'z')
    for t in ('fuzz-decoder', 'fuzz-report'):
        put(t, b'\0' + raw, base + '-file')
        cut = len(msgpack) // 2 % 256
        put(t, b'\1' + bytes([cut]) + msgpack, base + '-msgpack')
        put(t, b'\3' + bytes([cut]) + msgpack, base + '-msgpack-skip')
    if path in recs:
        put('fuzz-report', b'\4' + raw, base + '-pid1')
    metas = [p for k, p in fr if k == 's']
    for i, p in enumerate(metas):
        tag = p[:4]
        t = {b'MTKT': 'fuzz-stack-table', b'MTKM': 'fuzz-mappings'}.get(tag)
        if not t:
            continue
        put(t, b'\1' + p, '%s-%d-raw' % (base, i))
        # fix-up mode: count, then the body (the harness seals it)
        put(t, b'\0' + p[8:12] + p[16:], '%s-%d' % (base, i))

# stack tables over the harness's own mappings (pids 1-3 at 0x400000)
def mtkt(recs):
    body = b''
    for sid, pid, frames_ in recs:
        body += struct.pack('<III', sid, pid, len(frames_)) + b''.join(struct.pack('<Q', f) for f in frames_)
    return b'\0' + struct.pack('<I', len(recs)) + body
put('fuzz-stack-table', mtkt([(1, 1, [0x401000, 0x402345, 0x410000]), (2, 2, [0x400000 + 0x1000 * i for i in range(20)]), (3, 9, [0x1234])]), 'self-1')
put('fuzz-stack-table', mtkt([(5, 3, [0x400100]), (5, 3, [0x400200]), (70000, 1, [])]), 'self-dup')

# JSON lines
for f in ('events.jsonl',):
    put('fuzz-jsonl', open(os.path.join(fix, f), 'rb').read(), f)
for f in ('report-a.jsonl', 'report-b.jsonl'):
    put('fuzz-jsonl', open(os.path.join(top, 'tests/fixtures', f), 'rb').read(), f)
put('fuzz-jsonl', b'{"pid":1,"tid":2,"timestamp":3,"addr":4096,"type":"Realloc","old_addr":8192,"size":16,"stack":7}\n\n  {"type":"Free","pid":-1,"addr":18446744073709551615}\n', 'keys')
