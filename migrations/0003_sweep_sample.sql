-- 0003_sweep_sample: a search's sample of the executions that fit (for plotting the space) lives
-- in its own column, written with each checkpoint, so status polls never read or parse it.
ALTER TABLE sweeps ADD COLUMN sample TEXT;
