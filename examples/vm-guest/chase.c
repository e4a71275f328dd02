/* /init of the minimal guest (examples/vm-guest/build.sh): a random pointer chase over 1 GiB.
 *
 * Under this project's nested emulator user mode cannot make system calls (`int $0x80` raised
 * #UD when tried; `syscall` was reported failing by the setup), so the program reports
 * without them: it leaves its results in registers as decimal digits (each hex nibble one
 * digit, so "R12: 0000000000000612" reads as 612) and executes ud2. The kernel, booted with
 * print-fatal-signals=1, prints the registers of the dying init on the serial console, and then
 * panics and reboots (QEMU with -no-reboot exits).
 *
 *   R12  TSC ticks per hop of the chase (16 Mi dependent loads, after a warm-up of 4 Mi)
 *   R13  TSC ticks, in millions, of the first touch of the 1 GiB (one store per 4 KiB page)
 *   R14  TSC ticks, in millions, of building the random cycle (Sattolo's shuffle)
 *   R15  the slot the chase ended on (keeps the loop's result alive; not a measurement)
 *
 * The TSC is used because the guest has no other clock it can read without a system call; it
 * ticks at the host's TSC rate (KVM does not scale it here), so ticks convert to time with the
 * host's TSC frequency. */
#define SLOTS (1UL << 24) /* 16 Mi slots of 64 bytes (one cache line each) = 1 GiB */
#define HOPS (1UL << 24)
#define PAGE_SLOTS (4096 / 64)

struct slot {
    unsigned long next;
    unsigned long pad[7];
};
static struct slot mem[SLOTS] __attribute__((aligned(1 << 21)));

static unsigned long rdtsc(void) {
    unsigned lo, hi;
    __asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi));
    return ((unsigned long)hi << 32) | lo;
}

/* v written with one decimal digit per hex nibble, so that the kernel's %016lx prints it in
 * decimal. */
static unsigned long decimal_digits(unsigned long v) {
    unsigned long out = 0;
    for (int shift = 0; v && shift < 64; shift += 4) {
        out |= (v % 10) << shift;
        v /= 10;
    }
    return out;
}

void _start(void) {
    unsigned long t0 = rdtsc();
    for (unsigned long i = 0; i < SLOTS; i += PAGE_SLOTS) mem[i].next = i;
    unsigned long t1 = rdtsc();
    for (unsigned long i = 0; i < SLOTS; i++) mem[i].next = i;
    unsigned long x = 88172645463325252UL ^ t1;
    for (unsigned long i = SLOTS - 1; i > 0; i--) { /* Sattolo: one cycle through every slot */
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        unsigned long j = x % i;
        unsigned long t = mem[i].next;
        mem[i].next = mem[j].next;
        mem[j].next = t;
    }
    unsigned long t2 = rdtsc();
    unsigned long p = 0;
    for (unsigned long i = 0; i < HOPS / 4; i++) p = mem[p].next;
    unsigned long t3 = rdtsc();
    for (unsigned long i = 0; i < HOPS; i++) p = mem[p].next;
    unsigned long t4 = rdtsc();

    register unsigned long r12 __asm__("r12") = decimal_digits((t4 - t3) / HOPS);
    register unsigned long r13 __asm__("r13") = decimal_digits((t1 - t0) / 1000000);
    register unsigned long r14 __asm__("r14") = decimal_digits((t2 - t1) / 1000000);
    register unsigned long r15 __asm__("r15") = p;
    __asm__ volatile("ud2" ::"r"(r12), "r"(r13), "r"(r14), "r"(r15));
    for (;;) {
    }
}
