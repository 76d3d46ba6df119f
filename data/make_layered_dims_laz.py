#!/usr/bin/env python3
"""Writes data/layered_dims_pdrf8.las and its LAZ twin data/layered_dims_pdrf8.laz (developer-side:
laspy 2.7 + lazrs 0.8.2 from PyPI; the product never runs this). 400 seeded points of LAS 1.4
point format 8 (point14 + RGB + NIR) with two extra-bytes dimensions, every attribute varying,
for the --dimension tests of layered LAZ (tests/io/las_parts_laz_test.cpp: each dimension of the
LAZ grids as of the LAS).   python3 data/make_layered_dims_laz.py"""
import laspy
import numpy as np

from laz_twins import twin_header, write_twins

n = 400
rng = np.random.default_rng(2611)
header = twin_header(8, "1.4")
header.add_extra_dims([laspy.ExtraBytesParams(name="Amplitude", type=np.int16, scales=[0.1], offsets=[-5.0]),
                       laspy.ExtraBytesParams(name="Width", type=np.uint8)])
las = laspy.LasData(header)
las.x = 500000.0 + rng.integers(0, 3000, n) * 0.01
las.y = 4100000.0 + rng.integers(0, 3000, n) * 0.01
las.z = 100.0 + rng.integers(0, 3000, n) * 0.01
las.intensity = rng.integers(0, 65535, n).astype(np.uint16)
las.number_of_returns = rng.integers(1, 5, n).astype(np.uint8)
las.return_number = np.minimum(rng.integers(1, 5, n), las.number_of_returns).astype(np.uint8)
las.classification = rng.choice([1, 2, 3, 5, 6, 9, 40], n).astype(np.uint8)
las.synthetic = rng.integers(0, 2, n).astype(bool)
las.key_point = rng.integers(0, 2, n).astype(bool)
las.overlap = rng.integers(0, 2, n).astype(bool)
las.scanner_channel = rng.integers(0, 2, n).astype(np.uint8)
las.scan_direction_flag = rng.integers(0, 2, n).astype(bool)
las.edge_of_flight_line = rng.integers(0, 2, n).astype(bool)
las.user_data = rng.integers(0, 256, n).astype(np.uint8)
las.scan_angle = rng.integers(-15000, 15000, n).astype(np.int16)
las.point_source_id = rng.integers(1, 40, n).astype(np.uint16)
las.gps_time = np.cumsum(rng.random(n) * 1e-4) + 3.0e8
las.red = rng.integers(0, 65535, n).astype(np.uint16)
las.green = rng.integers(0, 65535, n).astype(np.uint16)
las.blue = rng.integers(0, 65535, n).astype(np.uint16)
las.nir = rng.integers(0, 65535, n).astype(np.uint16)
las.Amplitude = rng.integers(-300, 300, n) * 0.1 - 5.0
las.Width = rng.integers(0, 255, n).astype(np.uint8)
write_twins(las, "layered_dims_pdrf8")
