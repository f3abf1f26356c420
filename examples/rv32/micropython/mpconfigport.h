/* MicroPython configuration for the RV32IM machine (our port of MicroPython's embed port): MicroPython's
   core feature level (the compiler, the garbage collector, `%` formatting, str.format, sets, properties,
   the math, struct, collections, array and gc modules) plus arbitrary-precision integers (MPZ), single
   precision floats in software (RV32IM has no FPU: libgcc's soft-float routines), f-strings and tracebacks
   with line numbers. Left out: sys, the REPL helpers and every extmod module (json, re, random...): the
   embed port ships py/ alone. */
#include <port/mpconfigport_common.h>

#define MICROPY_CONFIG_ROM_LEVEL                (MICROPY_CONFIG_ROM_LEVEL_CORE_FEATURES)

#define MICROPY_ENABLE_COMPILER                 (1)
#define MICROPY_ENABLE_GC                       (1)
#define MICROPY_PY_GC                           (1)
#define MICROPY_LONGINT_IMPL                    (MICROPY_LONGINT_IMPL_MPZ)
#define MICROPY_FLOAT_IMPL                      (MICROPY_FLOAT_IMPL_FLOAT)
#define MICROPY_PY_FSTRINGS                     (1)
#define MICROPY_ENABLE_SOURCE_LINE              (1)
#define MICROPY_ERROR_REPORTING                 (MICROPY_ERROR_REPORTING_NORMAL)
#define MICROPY_PY_BUILTINS_STR_UNICODE         (0)
#define MICROPY_PY_SYS                          (0)
#define MICROPY_PY_IO                           (0)
#define MICROPY_KBD_EXCEPTION                   (0)
#define MICROPY_ENABLE_EXTERNAL_IMPORT          (0)
#define MICROPY_STACK_CHECK                     (1)
