/* MicroPython configuration for the RV32IM machine (our port of MicroPython's embed port): the minimal
   feature level plus the compiler, the garbage collector and arbitrary-precision integers (MPZ), so a
   script such as print(2**100) runs. No floating point (RV32IM has no FPU), no REPL helpers, no sys. */
#include <port/mpconfigport_common.h>

#define MICROPY_CONFIG_ROM_LEVEL                (MICROPY_CONFIG_ROM_LEVEL_MINIMUM)

#define MICROPY_ENABLE_COMPILER                 (1)
#define MICROPY_ENABLE_GC                       (1)
#define MICROPY_PY_GC                           (1)
#define MICROPY_LONGINT_IMPL                    (MICROPY_LONGINT_IMPL_MPZ)
#define MICROPY_ERROR_REPORTING                 (MICROPY_ERROR_REPORTING_NORMAL)
#define MICROPY_PY_BUILTINS_STR_UNICODE         (0)
#define MICROPY_PY_SYS                          (0)
#define MICROPY_FLOAT_IMPL                      (MICROPY_FLOAT_IMPL_NONE)
#define MICROPY_KBD_EXCEPTION                   (0)
#define MICROPY_STACK_CHECK                     (1)
#define MICROPY_PY_BUILTINS_SLICE               (1)
