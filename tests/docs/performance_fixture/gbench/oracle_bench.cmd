build/bench/oracle_bench --benchmark_min_time=0.05 --benchmark_format=json
