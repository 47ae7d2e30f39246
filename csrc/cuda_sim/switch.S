/* switch.S - the fiber context switch of the device emulation (x86-64 SysV):
 * bf_sim_switch(void **save_sp, void *new_sp) pushes the callee-saved
 * registers, saves the stack pointer into *save_sp, loads new_sp and pops the
 * other context's registers. A fresh fiber's stack holds six zero registers
 * and the address of its entry function (sim_runtime.cpp). */
    .text
    .globl bf_sim_switch
    .hidden bf_sim_switch
    .type bf_sim_switch, @function
bf_sim_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size bf_sim_switch, .-bf_sim_switch
    .section .note.GNU-stack,"",@progbits
