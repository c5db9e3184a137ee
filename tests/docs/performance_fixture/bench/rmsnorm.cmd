build/cli/moacert bench rmsnorm --variants cpu.fused,torch --threads 2 --json --shape T=4096,D=4096
