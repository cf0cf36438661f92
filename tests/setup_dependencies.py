#!/usr/bin/python3
"""Everything the project looks for on the machine is something tools/setup.sh provides.

A minimal Debian 12 (debootstrap) has only the packages of Priority `required`; anything else the
build, a test, a benchmark or a script looks for must be installed by tools/setup.sh, or the
set-up fails there and nowhere else (it happened with `bc` in tests/launch/faults.sh, then with
`pkg-config` for tokenizer/CMakeLists.txt). tools/dependencies.txt lists each such thing with the
Debian package that gives it; this test
  1. scans the project for what it looks for: commands in shell scripts (tests/, tools/, .ci/),
     in the commands C++ runs (std::system, popen) and in CTest's add_test; CMake's
     find_package / pkg_check_modules / find_path / find_library and project languages; Python
     modules imported by .py files, python heredocs and `python3 -c` strings; data under
     /usr/share. It fails naming each one the list misses, with the file that looks for it;
  2. checks that each listed package is in tools/setup.sh's PACKAGES or is one of Debian 12's
     `required` packages (the list says which it takes as such), and that an entry marked
     optional (`-`) is never a REQUIRED find.
tools/setup.sh checks the list's entries on the machine after installing.

Usage: setup_dependencies.py SOURCE_DIR
"""
import os
import re
import shlex
import sys

# Bash keywords and builtins: never a package's.
BUILTINS = set("""
if then else elif fi for in do done while until case esac function select time ! [[ ]] { } ( )
alias bg bind break builtin caller cd command compgen complete continue declare dirs disown echo
enable eval exec exit export false fc fg getopts hash help history jobs kill let local logout
mapfile popd printf pushd pwd read readarray readonly return set shift shopt source suspend test
times trap true type typeset ulimit umask unalias unset wait . : [
""".split())
# Words that put the next word in command position again.
PREFIXES = {"exec", "command", "builtin", "!", "then", "else", "do", "if", "elif", "while",
            "until", "time", "nohup", "env", "sudo", "nice", "setsid", "stdbuf"}
SEPARATORS = {"|", "||", "&&", ";", "&", ";;", "(", ")", "|&", "{", "}", "$(", "`"}
SCRIPT_SUFFIXES = (".sh", ".sbatch")


def shell_scripts(root):
    for top in ("tests", "tools", ".ci"):
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [d for d in dirs if d not in ("__pycache__",)]
            for name in sorted(files):
                path = os.path.join(folder, name)
                with open(path, "rb") as f:
                    head = f.readline()
                if name.endswith(SCRIPT_SUFFIXES) or re.match(rb"#!.*\b(ba)?sh\b", head):
                    yield path


def strip_heredocs(text):
    """Heredoc bodies (<<EOF ... EOF) are data for another program, not commands."""
    out, terminator = [], None
    for line in text.splitlines():
        if terminator is not None:
            if line.strip() == terminator:
                terminator = None
            out.append("")
            continue
        match = re.search(r"(?<!<)<<-?\s*['\"]?(\w+)['\"]?", line)
        if match:
            terminator = match.group(1)
        out.append(line)
    return "\n".join(out)


def code_text(text):
    """The script as one line of code: comments dropped, continuations joined, and each newline
    outside quotes made a `;` (so quoted multi-line strings, e.g. awk programs, stay one word).
    Arithmetic $((...)) is dropped."""
    out, quote, i = [], None, 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                out.append(text[i:i + 2])
                i += 2
                continue
            if c == quote:
                quote = None
            out.append(c)
        elif c == "\\" and text[i + 1:i + 2] == "\n":
            out.append(" ")
            i += 1
        elif c == "\\":
            out.append(text[i:i + 2])
            i += 1
        elif c in "'\"":
            quote = c
            out.append(c)
        elif c == "#" and (i == 0 or text[i - 1] in " \t\n;(|&"):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        elif c == "\n":
            out.append(" ; ")
        else:
            out.append(c)
        i += 1
    code = "".join(out)
    while "$((" in code:
        code = re.sub(r"\$\(\([^()]*(\([^()]*\)[^()]*)*\)\)", "0", code, count=1) \
            if re.search(r"\$\(\([^()]*(\([^()]*\)[^()]*)*\)\)", code) else code.replace("$((", "0", 1)
    return code


def split_operators(token):
    """shlex joins runs of punctuation (`);`, `()`, `||`): split them into shell operators."""
    if not token or any(c not in ";&|()" for c in token):
        return [token]
    parts = []
    while token:
        size = 2 if token[:2] in ("||", "&&", ";;", "|&") else 1
        parts.append(token[:size])
        token = token[size:]
    return parts


def commands_of(code):
    """The words in command position of code_text(script) (best effort; commands built in
    variables, run through `sh -c` strings or inside double-quoted $(...) are not seen)."""
    code = code.replace("$(", " __subst__ ( ").replace("`", " ` ")
    lexer = shlex.shlex(code, posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:  # an unbalanced quote inside a construct we do not parse
        return []
    tokens = [part for token in tokens for part in split_operators(token)]
    found, expect, depth, in_case, resume_at, pattern_start = [], True, 0, 0, 0, 0
    for k, token in enumerate(tokens):
        if k < resume_at:  # inside an array value NAME=( ... )
            continue
        if token.endswith("=") and k + 1 < len(tokens) and tokens[k + 1] == "(":
            resume_at = tokens.index(")", k + 1) + 1 if ")" in tokens[k + 1:] else len(tokens)
            continue
        if token == "(":
            depth += 1
            expect = True
            continue
        if token == ")":
            if depth > 0:
                depth -= 1
            elif in_case:  # `a | b)` of a case: patterns, not commands
                del found[pattern_start:]
            expect = True
            continue
        if token == ";;":
            pattern_start = len(found)
        if token in SEPARATORS or token == "__subst__":
            expect = expect or token != "__subst__"
            continue
        if not expect:
            if token == "in" and in_case:
                expect = True  # the first case pattern follows
                pattern_start = len(found)
            continue
        if token == "case":
            in_case += 1
            expect = False
            found.append(None)
            continue
        if token == "esac":
            in_case = max(0, in_case - 1)
            continue
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=", token):  # VAR=value prefix
            continue
        if token in PREFIXES:
            expect = True
            continue
        if token == "timeout":  # timeout [-s SIG] [-k T] DURATION CMD
            found.append(token)
            expect = "timeout"
            continue
        if expect == "timeout" and (token.startswith("-") or re.match(r"^[0-9.]+[smhd]?$", token)):
            continue
        expect = False
        found.append(token)
    return [word for word in found if word is not None]


def external(word, functions):
    if not word or word in BUILTINS or word in functions:
        return None
    if any(c in word for c in "$\"'{}*=<>") or word.startswith("-"):
        return None  # a variable, an expansion, a redirection, an option
    if "/" in word:
        if word.startswith("/"):
            return os.path.basename(word) or None  # /usr/bin/python3 -> python3
        return None  # a path inside the project (build/triax, tools/...)
    if not re.match(r"^[A-Za-z_][A-Za-z0-9_.+-]*$", word):
        return None
    return word


def read_list(path):
    """{(kind, name): package} and the `required:` packages of tools/dependencies.txt."""
    entries, required = {}, set()
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = line.split()
            if fields[0] == "required:":
                required.update(fields[1:])
            elif len(fields) == 3:
                entries[(fields[0], fields[1])] = fields[2]
            else:
                raise SystemExit(f"tools/dependencies.txt: `{line}` is not KIND NAME PACKAGE")
    return entries, required


def setup_packages(path):
    text = open(path).read()
    match = re.search(r"PACKAGES=\((.*?)\)", text, re.S)
    return set(match.group(1).split())


def defined_functions(text):
    return set(re.findall(r"^\s*(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)", text, re.M))


SKIP_DIRS = {"build", ".git", "__pycache__", "runs", "third_party"}


def project_files(root, suffixes, names=()):
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("build"))
        for name in sorted(files):
            # This file plants unlisted dependencies in its self-test's strings.
            if (name.endswith(suffixes) or name in names) and name != "setup_dependencies.py":
                yield os.path.join(folder, name)


CMAKE_LANGUAGES = {"C", "CXX", "CUDA", "OBJC", "OBJCXX", "Fortran", "HIP", "ISPC", "Swift",
                   "ASM", "ASM_NASM", "ASM-ATT", "ASM_MASM", "ASM_MARMASM", "CSharp", "Java"}


def cmake_finds(root):
    """(kind, name, required, path) for every find in CMakeLists.txt and *.cmake files, and each
    -fsanitize= runtime a target links (clang's runtimes are a package of their own)."""
    for path in project_files(root, (".cmake",), ("CMakeLists.txt",)):
        text = re.sub(r"#[^\n]*", "", open(path).read())
        for flags in re.findall(r"-fsanitize=([\w,]+)", text):
            for sanitizer in flags.split(","):
                yield "sanitizer", sanitizer, True, path
        for call, args in re.findall(r"\b(project|enable_language|find_package|pkg_check_modules|"
                                     r"find_path|find_library|find_program)\s*\(([^)]*)\)",
                                     text, re.I):
            call, words = call.lower(), args.split()
            required = "REQUIRED" in words
            if call == "project" and "LANGUAGES" in words:
                for lang in words[words.index("LANGUAGES") + 1:]:
                    if lang in CMAKE_LANGUAGES:
                        yield "language", lang, True, path
            elif call == "enable_language":
                yield "language", words[0], "OPTIONAL" not in words, path
            elif call == "find_package":
                yield "cmake", words[0], required, path
            elif call == "pkg_check_modules":
                keywords = {"REQUIRED", "QUIET", "IMPORTED_TARGET", "GLOBAL", "NO_CMAKE_PATH",
                            "NO_CMAKE_ENVIRONMENT_PATH"}
                for module in words[1:]:
                    if module not in keywords:
                        yield "pkg-config", re.split(r"[<>=]", module)[0], required, path
            elif call in ("find_path", "find_library", "find_program"):
                names = words[1:]
                if names and names[0] == "NAMES":
                    names = names[1:]
                kind = {"find_path": "header", "find_library": "library",
                        "find_program": "command"}[call]
                yield kind, names[0], required, path


# The first word of a command C++ hands to a shell: std::system("..."), popen(...), or a
# `command` string built with str("...").
CPP_COMMAND = re.compile(r'(?:std::system|popen)\(\s*(?:(?:triax::)?str\()?\s*"([^"]*)"|'
                         r'\bcommand\s*=\s*(?:(?:triax::)?str\()?\s*"([^"]*)"')


def cpp_commands(root):
    for path in project_files(root, (".cpp", ".h")):
        text = open(path, errors="replace").read()
        for match in CPP_COMMAND.finditer(text):
            literal = (match.group(1) or match.group(2)).strip()
            word = literal.split()[0] if literal.split() else ""
            if word and word != "command":
                yield word, path
            for inner in re.findall(r"command -v (\S+)", literal):
                yield inner, path


def ctest_commands(root):
    """add_test's COMMAND words that are not the project's own executables."""
    texts = {path: re.sub(r"#[^\n]*", "", open(path).read())
             for path in project_files(root, (), ("CMakeLists.txt",))}
    targets = {name for text in texts.values()
               for name in re.findall(r"add_executable\s*\(\s*([\w-]+)", text)}
    for path, text in texts.items():
        for word in re.findall(r"add_test\s*\([^)]*?\bCOMMAND\s+(\S+)", text):
            if word not in targets:
                yield word, path


STDLIB = set(getattr(sys, "stdlib_module_names", ())) | {"__future__"}


def python_sources(root):
    """(path, code) for every piece of Python the project runs with the system python3."""
    for path in project_files(root, (".py",)):
        yield path, open(path, errors="replace").read()
    for path in project_files(root, (".sh", ".sbatch", ".cpp", ".h")):
        text = open(path, errors="replace").read()
        # python3 - ARGS <<'PY' ... PY
        for end, body in re.findall(r"python3?[^\n]*<<-?\s*['\"]?(\w+)['\"]?\n(.*?)\n\s*\1\b",
                                    text, re.S):
            yield path, body
        for quote, body in re.findall(r"python3?\s+-c\s+(['\"])(.*?)\1", text, re.S):
            yield path, body.replace(";", "\n")


def python_imports(root):
    local = {os.path.splitext(os.path.basename(p))[0] for p in project_files(root, (".py",))}
    for path, code in python_sources(root):
        for line in code.splitlines():
            match = re.match(r"\s*(?:import\s+([\w., ]+)|from\s+([\w.]+)\s+import)", line)
            if not match:
                continue
            names = match.group(1).split(",") if match.group(1) else [match.group(2)]
            for name in names:
                top = name.strip().split(" ")[0].split(".")[0]
                if top and top not in STDLIB and top not in local:
                    yield top, path


def data_paths(root):
    for path in project_files(root, (".cpp", ".h", ".sh", ".py", ".yaml", ".sbatch", ".txt")):
        if path.endswith("tools/dependencies.txt"):
            continue
        for data in re.findall(r"/usr/share/[\w./-]+", open(path, errors="replace").read()):
            yield data.rstrip("/."), path


GPU_ONLY = "# Runs on the GPU machine only (docs/gpu.md)."


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    listed, required = read_list(os.path.join(root, "tools/dependencies.txt"))
    installed = setup_packages(os.path.join(root, "tools/setup.sh"))
    problems, seen = [], set()

    def need(kind, name, path, is_required=True):
        # A script marked as run only on the GPU machine (docs/gpu.md) looks for what that
        # machine has and Debian's main archive does not (nvidia-smi, PyTorch's CUDA wheels):
        # optional finds, listed with `-`.
        if path.endswith((".sh", ".py")) and GPU_ONLY in open(path, errors="replace").read():
            is_required = False
        seen.add((kind, name))
        rel = os.path.relpath(path, root)
        if (kind, name) not in listed:
            problems.append(f"{rel}: looks for {kind} `{name}`, which tools/dependencies.txt does "
                            "not list (add `" + kind + " " + name + " PACKAGE` with the Debian "
                            "package that gives it, and install that package in tools/setup.sh)")
        elif listed[(kind, name)] == "-" and is_required:
            problems.append(f"{rel}: {kind} `{name}` is REQUIRED, but tools/dependencies.txt "
                            "marks it optional (-): name its package")

    for path in shell_scripts(root):
        text = strip_heredocs(open(path, errors="replace").read())
        functions = defined_functions(text)
        # Functions of a helper sourced from beside the script (`. "$(dirname "$0")/x.sh"`).
        for helper in re.findall(r'^\s*(?:\.|source)\s+"\$\(dirname "\$0"\)/([\w.-]+)"', text, re.M):
            helper_path = os.path.join(os.path.dirname(path), helper)
            if os.path.exists(helper_path):
                functions |= defined_functions(open(helper_path, errors="replace").read())
        for word in commands_of(code_text(text)):
            command = external(word, functions)
            if command is not None:
                need("command", command, path)
    for word, path in list(cpp_commands(root)) + list(ctest_commands(root)):
        command = external(word, set())
        if command is not None:
            need("command", command, path)
    for kind, name, is_required, path in cmake_finds(root):
        need(kind, name, path, is_required)
    for module, path in python_imports(root):
        need("python", module, path)
    prefixes = [name for (kind, name) in listed if kind == "file"]
    for data, path in data_paths(root):
        prefix = next((p for p in prefixes if data == p or data.startswith(p + "/")), data)
        need("file", prefix, path)

    for (kind, name), package in sorted(listed.items()):
        if package != "-" and package not in installed and package not in required:
            problems.append(f"tools/dependencies.txt: {kind} `{name}` comes from {package}, which "
                            "tools/setup.sh does not install and Debian 12 does not always have "
                            "(add it to PACKAGES in tools/setup.sh)")
    if "-v" in sys.argv:
        for kind, name in sorted(seen):
            print(f"  {kind} {name} -> {listed.get((kind, name), '?')}")
    kinds = sorted({kind for kind, _ in seen})
    print(f"{len(seen)} things looked for ({', '.join(kinds)}); {len(listed)} listed")
    for problem in sorted(set(problems)):
        print("FAIL: " + problem)
    return 1 if problems else 0


def self_test():
    """The check fails on each kind of unlisted dependency, naming it, and passes on a listed one:
    a copy of tools/dependencies.txt and tools/setup.sh beside one planted file at a time."""
    import contextlib
    import io
    import shutil
    import tempfile
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    planted = [
        ("CMakeLists.txt", "find_package(Foo REQUIRED)\n", "cmake `Foo`"),
        ("CMakeLists.txt", "pkg_check_modules(X REQUIRED IMPORTED_TARGET libfoo)\n",
         "pkg-config `libfoo`"),
        ("CMakeLists.txt", "find_path(FOO_DIR foo/foo.h REQUIRED)\n", "header `foo/foo.h`"),
        ("CMakeLists.txt", "find_package(CUDAToolkit REQUIRED)\n", "REQUIRED, but"),
        ("CMakeLists.txt", "project(x LANGUAGES CXX Fortran)\n", "language `Fortran`"),
        ("CMakeLists.txt", "set(F -fsanitize=thread)\n", "sanitizer `thread`"),
        ("tests/x.py", "import numpy as np\nfrom yaml import safe_load\n", "python `numpy`"),
        ("tests/x.sh", "#!/bin/sh\nbc -l </dev/null\n", "command `bc`"),
        ("tests/x.sh", "#!/bin/sh\n/usr/bin/python3 - <<'PY'\nimport scipy\nPY\n", "python `scipy`"),
        ("tests/x.cpp", 'int f() { return std::system("jq . x.json"); }\n', "command `jq`"),
        ("tests/x.cpp", 'const char* p = "/usr/share/dict/words";\n', "file `/usr/share/dict/words`"),
    ]
    failures = 0
    for name, text, expected in planted + [("CMakeLists.txt", "find_package(ZLIB REQUIRED)\n", None)]:
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, "tools"))
            os.makedirs(os.path.join(root, "tests"), exist_ok=True)
            for listed in ("tools/dependencies.txt", "tools/setup.sh"):
                shutil.copy(os.path.join(here, listed), os.path.join(root, listed))
            with open(os.path.join(root, name), "w") as f:
                f.write(text)
            sys.argv = ["setup_dependencies.py", root]
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                code = main()
            ok = (code == 1 and expected in out.getvalue()) if expected else code == 0
            print(f"{'ok' if ok else 'FAIL'}: {name}: {text.strip()!r} -> exit {code}"
                  + (f", names {expected}" if expected and ok else ""))
            if not ok:
                print(out.getvalue())
                failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(self_test() if "--self-test" in sys.argv else main())
