"""What the sample generators of data/ share (developer-side: laspy 2.7 + lazrs 0.8.2 from PyPI):
the header of a small seeded cloud near (500000, 4100000) and the writing of a LAS file with
its LAZ twin."""
import os

import laspy

here = os.path.dirname(os.path.abspath(__file__))


def twin_header(point_format, version):
    """A header of 0.01 scales, offsets 500000, 4100000, 0."""
    header = laspy.LasHeader(point_format=point_format, version=version)
    header.scales = [0.01, 0.01, 0.01]
    header.offsets = [500000.0, 4100000.0, 0.0]
    return header


def write_twins(las, stem):
    """Writes data/STEM.las and its LAZ twin data/STEM.laz (lazrs)."""
    las.write(os.path.join(here, stem + ".las"))
    las.write(os.path.join(here, stem + ".laz"), laz_backend=laspy.LazBackend.Lazrs)
    print(f"wrote {stem}.las and {stem}.laz")
