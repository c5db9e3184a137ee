build/bench/sampled_certify_bench rmsnorm cpu.fused T=4096,D=1024
