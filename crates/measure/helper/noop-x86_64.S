/* The no-op program the creation benchmarks exec: exit_group(0) and nothing else.
   Static, no C library, no dynamic loader, so an exec of it costs only the kernel's
   exec path. */
    .globl _start
    .text
_start:
    mov $231, %eax      /* __NR_exit_group */
    xor %edi, %edi
    syscall
    hlt
    .section .note.GNU-stack,"",@progbits
