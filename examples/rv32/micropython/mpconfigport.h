/* MicroPython configuration for the RV32IM machine (our port of MicroPython's embed port): MicroPython's
   "extra features" level, as its larger ports build it (the compiler, the garbage collector, `%` and
   str.format, f-strings, sets and frozensets, properties, unicode strings, tracebacks with line numbers; the
   math, cmath, struct, collections, array, gc, sys and micropython modules), arbitrary-precision integers
   (MPZ) and single-precision floats in software (RV32IM has no FPU: libgcc's soft-float routines). Left out,
   each for a reason: the extmod modules (json, re, random, time, os...: the embed port ships py/ alone), a
   REPL, input() and the scheduler (one script on standard input), sys.stdin/stdout objects and sys.path
   (no file system). */
#include <port/mpconfigport_common.h>

#define MICROPY_CONFIG_ROM_LEVEL                (MICROPY_CONFIG_ROM_LEVEL_EXTRA_FEATURES)

#define MICROPY_ENABLE_COMPILER                 (1)
#define MICROPY_ENABLE_GC                       (1)
#define MICROPY_PY_GC                           (1)
#define MICROPY_LONGINT_IMPL                    (MICROPY_LONGINT_IMPL_MPZ)
#define MICROPY_FLOAT_IMPL                      (MICROPY_FLOAT_IMPL_FLOAT)
#define MICROPY_PY_FSTRINGS                     (1)
#define MICROPY_ENABLE_SOURCE_LINE              (1)
#define MICROPY_ERROR_REPORTING                 (MICROPY_ERROR_REPORTING_NORMAL)
#define MICROPY_STACK_CHECK                     (1)
#define MP_SSIZE_MAX                            (0x7fffffff)

/* sys without the parts that need a file system or stream objects. */
#define MICROPY_PY_SYS                          (1)
#define MICROPY_PY_SYS_STDFILES                 (0)
#define MICROPY_PY_SYS_STDIO_BUFFER             (0)
#define MICROPY_PY_SYS_PATH                     (0)
#define MICROPY_PY_SYS_PS1_PS2                  (0)
#define MICROPY_PY_SYS_ATTR_DELEGATION          (0)
#define MICROPY_PY_SYS_TRACEBACKLIMIT           (0)
#define MICROPY_PY_SYS_PLATFORM                 "loom-rv32im"
#define MICROPY_HW_BOARD_NAME                   "the woven RV32IM machine"
#define MICROPY_HW_MCU_NAME                     "rv32im"

/* One script or session on standard input (main.c): no input(), keyboard interrupt, scheduler, file imports. */
#define MICROPY_HELPER_REPL                     (1)
#define MICROPY_KBD_EXCEPTION                   (0)
#define MICROPY_ENABLE_SCHEDULER                (0)
#define MICROPY_ENABLE_EXTERNAL_IMPORT          (0)
#define MICROPY_PY_BUILTINS_INPUT               (0)
#define MICROPY_PY_BUILTINS_HELP                (0)
#define MICROPY_PY_MICROPYTHON_MEM_INFO         (0)
#define MICROPY_PY_BUILTINS_COMPILE             (0)
#define MICROPY_PY_BUILTINS_EXECFILE            (0)
#define MICROPY_PY_IO                           (0)
#define MICROPY_PY_UCTYPES                      (0)
#define MICROPY_PY_ERRNO                        (0)
