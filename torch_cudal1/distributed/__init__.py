"""Work spread over many machines: Ray warming (``ray_warm``). Ray is an optional extra."""
