#include "rt.h"
void report_ok(int n) { rt_printf("isa_selftest: %d checks ok\n", n); }
void report_fail(int n) { rt_printf("isa_selftest: check %d FAILED\n", n); }
