"""The lab: prompt suites, sweeps, benches, reports and the paper's reference numbers, built on the core decoder."""
