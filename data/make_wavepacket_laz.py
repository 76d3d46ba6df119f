#!/usr/bin/env python3
"""Writes data/wavepacket_pdrf4.las and its LAZ twin data/wavepacket_pdrf4.laz (developer-side:
laspy 2.7 + lazrs 0.8.2 from PyPI; the product never runs this). 300 seeded points of LAS 1.3
point format 4 (point10 + GPS time + wave packet) in one chunk, for the wavepacket13 test
(tests/io/laz_wavepacket_test.cpp).   python3 data/make_wavepacket_laz.py"""
import laspy
import numpy as np

from laz_twins import twin_header, write_twins

n = 300
rng = np.random.default_rng(2026)
header = twin_header(4, "1.3")
las = laspy.LasData(header)
las.x = 500000.0 + rng.integers(0, 2000, n) * 0.01
las.y = 4100000.0 + rng.integers(0, 2000, n) * 0.01
las.z = 100.0 + rng.integers(0, 3000, n) * 0.01
las.intensity = rng.integers(0, 65535, n).astype(np.uint16)
las.classification = rng.choice([1, 2, 5, 6], n).astype(np.uint8)
las.number_of_returns = rng.integers(1, 4, n).astype(np.uint8)
las.return_number = np.minimum(rng.integers(1, 4, n), las.number_of_returns).astype(np.uint8)
las.gps_time = np.cumsum(rng.random(n) * 1e-4) + 4.0e5
las.wavepacket_index = rng.integers(1, 4, n).astype(np.uint8)
las.wavepacket_offset = (np.cumsum(rng.integers(0, 512, n)) + 60).astype(np.uint64)
las.wavepacket_size = rng.integers(64, 512, n).astype(np.uint32)
las.return_point_wave_location = (rng.random(n) * 1000).astype(np.float32)
las.x_t = rng.normal(0, 1e-4, n).astype(np.float32)
las.y_t = rng.normal(0, 1e-4, n).astype(np.float32)
las.z_t = rng.normal(-1e-3, 1e-4, n).astype(np.float32)
write_twins(las, "wavepacket_pdrf4")
