#pragma once
// `faust:` stages: Faust programs (.dsp), compiled when the chain is planned by libfaust's
// LLVM backend (its interpreter backend the fallback) and hosted on the hosted-step mechanism
// (rt/hosted.hpp). Not real-time, except the processors.
//
// Design: libfaust (libfaust.so.2, which maps LLVM: about 100 MB) is opened with dlopen on
// the first faust: stage only, and never closed; a run without one never maps it. Every call
// into libfaust that makes or deletes something (factories, instances) holds one global
// mutex, since libfaust is not thread-safe there. The program is compiled once per stage, at
// load; create() makes instances of it for the stream's rate, one per channel for a program
// with 1 input and 1 output, else one on the whole chunk when its inputs and outputs both
// equal the chunk's channels. Each instance computes into buffers of its own, copied back
// into the chunk (plugin_processor.hpp). Each call into libfaust or the compiled code is
// marked (HostedPhase off the real-time thread, ForeignCall on it); the UI callbacks that
// code calls back are chunkscope's own (HostCode).
//
// Spec fields after the program, each `key=value`:
//   <label>=<number>   a control by its label ("gain"), when one control has that label
//   </path>=<number>   a control by its path ("/comp/ratio"): the full path Faust gives it
//                      (the groups from the top one, anonymous groups left out, ' ', '#',
//                      '*', ',', '?', '[', ']', '{', '}', '(' and ')' written '_'), or the
//                      end of exactly one path at a '/'
//   opts=<options>     compiler options separated by spaces ("-vec -vs 32"); -double, -quad
//                      and -fx (and their long forms) are refused: the host passes floats;
//                      so are -sch and -omp (worker threads) and -fm (host math functions).
//                      The program's folder is searched for imports after the -I folders given
//   backend=llvm|interp  only that backend; by default LLVM, and the interpreter when LLVM
//                      cannot compile the program (the step's label then ends "(interpreter)")
// A value is a plain decimal number inside the control's [min, max] (a button or a checkbox:
// 0 or 1); controls not given keep the program's initial values.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rt/hosted.hpp"

namespace chunkscope {

/// Whether this build hosts Faust programs (built with libfaust's headers). [no-alloc, no-block]
bool faust_available() noexcept;

/// Loads libfaust (libfaust.so.2, once per process), compiles the program at `path` with `params`' options, checks its controls
/// against the other params and returns the factory that makes its processors, labelled
/// "faust:" + the file's name. Throws InputError naming `where`: no such file, libfaust not
/// loadable, a refused option, the compiler's error (one line: its file and line, the
/// message, the line's text), an unknown control (with the likely ones), a value that is not
/// a number or lies outside the control's range. [allocates, blocks]
std::shared_ptr<const HostedFactory> load_faust_stage(const std::string& path,
                                                      const std::vector<std::pair<std::string, std::string>>& params,
                                                      const std::string& where);

/// Why the library `soname` cannot serve as libfaust (one line, as a faust: stage is refused
/// with), or "" when it can: it opens, and has the functions of both backends. The loader runs
/// this on libfaust.so.2; tests run it on a library that is not there. [allocates, blocks]
std::string faust_library_problem(const std::string& soname);

/// How a faust: stage was compiled: the backend ("LLVM" or "interpreter"), the time the
/// compile took, and, when the interpreter ran because LLVM could not compile the program,
/// LLVM's reason.
struct FaustBuild {
  std::string backend;
  std::int64_t compile_ns = 0;
  std::string llvm_failure;
};
/// The build of the faust: stage `f` makes, or nullopt when `f` is not a faust: stage. [allocates]
std::optional<FaustBuild> faust_build_of(const HostedFactory& f);
/// "compiled by libfaust 2.54.9's LLVM backend in 183.2 ms" (and why the interpreter ran, when
/// it did), or "" when `f` is not a faust: stage: for the chain command and verbose output.
/// [allocates]
std::string faust_build_note(const HostedFactory& f);

}  // namespace chunkscope
