build/cli/moacert bench attention.fwd --variants cpu.flash,torch --threads 2 --json --shape B=1,H=2,N=256,M=256,D=64
