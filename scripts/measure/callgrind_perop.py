#!/usr/bin/env python3
"""Instructions per op from two callgrind runs of one benchmark at N1 and N2
iterations: the difference over N2-N1, so set-up cancels. Self cost is
credited to the source function it comes from (code the compiler inlined
counts for the inlined function: the line table names its source), call
edges carry inclusive cost. Groups: the handlers, the lock classes and
counters, the tree's own work. Usage (scripts/measure/serveop-callgrind.sh):

    callgrind_perop.py A.out B.out N1 N2
"""
import sys, re, os, collections, functools

def parse(path):
    names = {'fl': {}, 'fn': {}}
    cur_file = cur_fn = None
    line = 0
    skip_next = False
    by_line = collections.Counter()
    by_fn = collections.Counter()
    total = 0
    edges = collections.Counter()
    callee = None
    def name(kind, arg):
        m = re.match(r'\((\d+)\)(?: (.*))?', arg)
        if not m:
            return arg
        k = kind if kind in names else 'fl'
        if m.group(2) is not None:
            names[k][m.group(1)] = m.group(2)
        return names[k].get(m.group(1), '?')
    for raw in open(path):
        raw = raw.rstrip('\n')
        if not raw:
            continue
        c = raw[0]
        if c.isdigit() or c in '+-*':
            parts = raw.split()
            p = parts[0]
            if p == '*':
                pass
            elif p[0] in '+-':
                line += int(p)
            else:
                line = int(p)
            if skip_next:
                skip_next = False
                edges[(cur_fn, callee)] += int(parts[1]) if len(parts) > 1 else 0
                continue
            cost = int(parts[1]) if len(parts) > 1 else 0
            by_line[(cur_file, line)] += cost
            by_fn[cur_fn] += cost
            total += cost
            continue
        key, _, arg = raw.partition('=')
        if key in ('fl', 'fi', 'fe'):
            cur_file = name('fl', arg)
            if key == 'fl':
                fl_file = cur_file
        elif key == 'fn':
            cur_fn = name('fn', arg)
            cur_file = fl_file
        elif key in ('cfl', 'cfi'):
            name('fl', arg)
        elif key == 'cfn':
            callee = name('fn', arg)
        elif key == 'calls':
            skip_next = True
    return by_line, by_fn, total, edges

@functools.lru_cache(None)
def funcs(path):
    out = []
    try:
        for i, l in enumerate(open(path), 1):
            m = re.match(r'func (\([^)]*\) )?(\w+)', l)
            if m:
                recv = m.group(1) or ''
                r = re.sub(r'\(\w+ ', '(', recv).strip()
                out.append((i, (r + '.' if r else '') + m.group(2)))
    except OSError:
        pass
    return out

def srcfunc(path, line):
    fs = funcs(path)
    name = '?'
    for i, f in fs:
        if i > line:
            break
        name = f
    short = re.sub(r'^.*/(src|mod)/|^' + re.escape(os.getcwd()) + '/', '', path or '?')
    return short + ':' + name

def group(lines):
    c = collections.Counter()
    for f, l, v in lines:
        c[srcfunc(f, l)] += v
    return c


a, b, n1, n2 = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def load(path):
    bl, bf, tot, ed = parse(path)
    return {'total': tot, 'edges': [[x, y, c] for (x, y), c in ed.items()],
            'lines': [[f, l, c] for (f, l), c in bl.items()]}
A, B = load(a), load(b)
per = n2 - n1
ga, gb = group(A['lines']), group(B['lines'])
self_ = {k: (gb[k] - ga[k]) / per for k in set(ga) | set(gb)}
ea = collections.Counter({(x, y): v for x, y, v in A['edges']})
eb = collections.Counter({(x, y): v for x, y, v in B['edges']})
edge = {k: (eb[k] - ea[k]) / per for k in set(ea) | set(eb)}
tot = (B['total'] - A['total']) / per
def S(pat):
    return sum(v for k, v in self_.items() if re.search(pat, k))
def E(caller, callee):
    return sum(v for (a, b), v in edge.items() if re.search(caller, a or '') and re.search(callee, b or ''))
print(f"total {tot:.0f}")
print("== handlers (inclusive, per op)")
for h in ['Lookup', 'Open', 'Read', 'Release', 'GetAttr']:
    v = E('.', 'fusefs.[(][*]Server[)].' + h + '$')
    print(f"{h:24s} {v:8.0f}")
v = E('.', 'readResult[)].Done$')
print(f"{'READ reply Done':24s} {v:8.0f}")
print(f"{'benchmark loop self':24s} {S(r'bench_test.go|handles_test.go'):8.0f}")
print("== lock classes and counters (self, inlined code included, per op)")
rows = [
 ('grace/RCU read side: Grace.ReadLock/ReadUnlock', S(r'locking/grace.go:\(\*Grace\)\.Read(Lock|Unlock)$')),
 ('RCU.RLock/RUnlock wrapper', S(r'locking/locks.go:\(\*RCU\)\.R(Lock|Unlock)$')),
 ('read-side counters (readShards, holdSampler)', S(r'locking/holdtime.go:')),
 ('kernfsim rlock/runlock/rlockAttrs/runlockAttrs', S(r'kernfsim/tree.go:\(\*Tree\)\.(r|run)lock(Attrs)?$')),
 ('open-file lock (Tree.openFileLock)', S(r'kernfsim/file.go:\(\*Tree\)\.openFileLock$')),
 ('pshard.Of + procPin/procUnpin', S(r'internal/pshard/|runtime/proc.go:proc(Pin|Unpin)$')),
 ('request counters (Stats.count)', S(r'fusefs/stats.go:\(\*Stats\)\.count$')),
 ('handle table', S(r'fusefs/handles.go:')),
 ('handle/free-list mutexes (sync)', S(r'sync/mutex.go:|internal/sync/mutex.go:')),
 ('nodeid table (nodes.go, table.go, Server.node)', S(r'fusefs/nodes.go:|fusefs/table.go:|fusefs/server.go:\(\*Server\)\.node$')),
 ('atomic wrappers (sync/atomic)', S(r'sync/atomic/')),
]
for n, v in rows:
    print(f"{n:50s} {v:8.0f}")
print("== pshard.Of callers (inclusive per op)")
for (a, b), v in sorted(edge.items(), key=lambda kv: -kv[1]):
    if b and b.endswith('pshard.Of') and v >= 1:
        print(f"{v:8.0f}  {a}")
print("== RCU.RLock / RUnlock callers (inclusive per op)")
for (a, b), v in sorted(edge.items(), key=lambda kv: -kv[1]):
    if b and re.search(r'\(\*RCU\)\.R(Lock|Unlock)$', b) and v >= 1:
        print(f"{v:8.0f}  {a} -> {b.split('.')[-1]}")
print("== tree work")
for n, p in [('permission check (permitted, aclPermissionCheck, permissionLocked)', r'kernfsim/(inode|tree).go:(permitted|aclPermissionCheck|permissionLocked)$'),
             ('name hash (nameHash, maphash, aeshash)', r'nameHash$|maphash|asm_amd64.s'),
             ('child index search (find, firstAtLeast, named, bytealg)', r'children.go:|bytealg'),
             ('lookupLocked', r'tree.go:lookupLocked$'),
             ('getattrLocked + time', r'getattrLocked$|time/time.go'),
             ('fillStat', r'fusefs/ops.go:fillStat$'),
             ('show/read (File, bytes.Buffer, Pool)', r'kernfsim/file.go:\(\*File\)|bytes/|sync/pool.go'),
             ]:
    print(f"{n:60s} {S(p):8.0f}")
