/* The no-op program the creation benchmarks exec: exit_group(0) and nothing else. */
    .globl _start
    .text
_start:
    mov x8, #94         /* __NR_exit_group */
    mov x0, #0
    svc #0
    .section .note.GNU-stack,"",@progbits
