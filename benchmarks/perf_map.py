"""Run a Python script so that Linux ``perf`` can name the Numba kernels it runs.

Run by hand from the repository root (needs ``perf`` and the ``bench`` extra):

    perf record -F 499 -g -o worker.data \\
        python benchmarks/perf_map.py benchmarks/bench_worker.py --sample 40 --repeat 1
    perf report -i worker.data --no-children --sort symbol --stdio -g none

At exit the script writes ``/tmp/perf-<pid>.map``, the file ``perf report`` reads for code
that no file on disk holds: every function of every compiled Numba library the process
loaded (from the kernel cache, which is where the workers' kernels come from), with its
address and size from the library's ELF symbol table, named ``module.function@library``
(the library is the kernel whose compilation linked the function in; calls between kernels
may run any one of the copies). ``NRT_incref`` and ``NRT_decref`` there are the reference
counts of Numba's arrays; their atomic operations run in a helper outside every library,
which ``perf`` shows as a bare address. Compile the kernels before (any earlier run) so that
they load from the cache.
"""

import atexit
import collections
import io
import os
import re
import runpy
import sys

from elftools.elf.elffile import ELFFile
from numba.core import codegen

_LOADED = []  # (library, its object code) as loaded from the kernel cache
_unserialize = codegen.JITCodeLibrary._unserialize.__func__


def _keep_object_code(cls, codegen_, state):
    library = _unserialize(cls, codegen_, state)
    _, kind, data = state
    if kind == "object":
        _LOADED.append((library, data[0]))
    return library


codegen.JITCodeLibrary._unserialize = classmethod(_keep_object_code)


def readable(symbol):
    """``module.function`` of a Numba symbol (``_ZN...`` mangled), else the symbol."""
    match = re.match(r"(?:cfunc\.)?_ZN(?:7cpython)?((?:\d+\w+?)+?)B\d", symbol)
    if not match:
        return symbol[:80]
    parts, rest = [], match.group(1)
    while rest:
        size = re.match(r"\d+", rest)
        if size is None:
            return symbol[:80]
        rest = rest[size.end():]
        parts.append(rest[:int(size.group())])
        rest = rest[int(size.group()):]
    return ".".join(parts[-2:])


def functions(library, object_code):
    """``(address, size, name)`` of every function ``object_code`` defines, placed by the
    addresses the JIT gave its global symbols."""
    elf = ELFFile(io.BytesIO(object_code))
    symbols = [s for s in elf.get_section_by_name(".symtab").iter_symbols()
               if s["st_info"]["type"] == "STT_FUNC" and s["st_size"] > 0]
    bases = collections.defaultdict(collections.Counter)
    for symbol in symbols:
        if symbol["st_info"]["bind"] == "STB_GLOBAL":
            address = library.get_pointer_to_function(symbol.name)
            if address:
                bases[symbol["st_shndx"]][address - symbol["st_value"]] += 1
    base = {section: counts.most_common(1)[0][0] for section, counts in bases.items()}
    owners = [readable(s.name) for s in symbols if s["st_info"]["bind"] == "STB_GLOBAL"
              and not s.name.startswith(("NRT_", "cfunc.", "_ZN7cpython"))]
    owner = owners[0] if owners else library.name
    return [(base[s["st_shndx"]] + s["st_value"], s["st_size"], f"{readable(s.name)}@{owner}")
            for s in symbols if s["st_shndx"] in base]


def write_map():
    rows = sorted(row for library, code in _LOADED for row in functions(library, code))
    path = f"/tmp/perf-{os.getpid()}.map"
    with open(path, "w") as out:
        out.writelines(f"{address:x} {size:x} {name}\n" for address, size, name in rows)
    print(f"{path}: {len(rows)} functions of {len(_LOADED)} compiled libraries",
          file=sys.stderr)


if __name__ == "__main__":
    atexit.register(write_map)
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
