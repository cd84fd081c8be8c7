"""The Ray engine: the same dedup as the local engine, its stages spread over a Ray cluster.

:class:`~neardup.engines.ray.engine.RayDedup` runs a job's stages as Ray Data tasks over splits
of the input and partitions of its documents, with the local engine's kernels, and gives the
local engine's clusters, representatives and pairs. ``neardup dedup --engine ray`` and
``DedupJob(engine="ray")`` reach it through :func:`neardup.jobs.on_ray.on_ray`. It needs the
``ray`` extra (``pip install 'neardup[ray]'``).
"""
