"""scripts/perf_page.py on braid-perf's JSON documents, without a GPU.

    perf_page_test.py

The input is tests/python/perf_compare_fixture.json, the document braid-perf writes for a known
report (tests/unit/perf_json_test.cc checks that byte for byte), and variants of it.
"""

import copy
import json
import tarfile
import os
import shutil
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import perf_page  # noqa: E402

with open(os.path.join(HERE, "perf_compare_fixture.json")) as f:
    FIXTURE = json.load(f)

PAGE = "# Performance\n\nhand-written text\n\n%s\nold generated text\n%s\n\n## Other figures\nkept\n" % (
    perf_page.BEGIN, perf_page.END)
README = "# Project\n\n%s\nold headline\n%s\n\n## Install\n" % (perf_page.HEADLINE_BEGIN, perf_page.HEADLINE_END)


class PerfPageTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.data = os.path.join(self.dir, "perf-data")
        self.page = os.path.join(self.dir, "performance.md")
        self.plots = os.path.join(self.dir, "perf-plots")
        self.readme = os.path.join(self.dir, "README.md")
        os.makedirs(os.path.join(self.data, "h200"))
        with open(self.page, "w") as f:
            f.write(PAGE)
        with open(self.readme, "w") as f:
            f.write(README)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def add(self, name, doc):
        with open(os.path.join(self.data, "h200", name), "w") as f:
            json.dump(doc, f)

    def run_page(self, *extra):
        return perf_page.main(["--data", self.data, "--page", self.page, "--readme", self.readme, "--plots",
                               self.plots] + list(extra))

    def read_page(self):
        with open(self.page) as f:
            return f.read()

    def test_tables_plot_and_kept_text(self):
        self.add("all_reduce.json", FIXTURE)
        windows = copy.deepcopy(FIXTURE)
        windows["op"] = "all_gather"
        windows["command"] = ["braid-perf", "all_gather", "-p", "-R", "2", "-G", "10"]
        windows["nranks"] = 4
        windows["gpus"] = ["NVIDIA H200"] * 4
        windows["environment"] = ["NCCL_DEBUG=INFO"]
        self.add("all_gather_windows.json", windows)
        self.assertEqual(self.run_page(), 0)
        page = self.read_page()
        self.assertTrue(page.startswith("# Performance\n\nhand-written text\n\n" + perf_page.BEGIN))
        self.assertTrue(page.endswith(perf_page.END + "\n\n## Other figures\nkept\n"))
        self.assertNotIn("old generated text", page)
        # One table per machine, in rank order; the band ratios are geometric means of time ratios.
        self.assertLess(page.index("### 2 H200:"), page.index("### 4 H200:"))
        # A case's title says what sets it apart: options, and variables other than logging's.
        self.assertIn("| AllReduce (BRAID_DIRECT_SIMPLE_BUFFSIZE=262144) | 1 KiB-1 MiB | 0.50 | - | - | 0.2 / 52.4 "
                      "| 0 wrong | 2026-11-29 |", page)
        self.assertIn("| AllGather (windows, CUDA graph) |", page)
        # Every size: the refused row says so, the one only NVIDIA timed has no ratio.
        self.assertIn("| 1 KiB | 5.50 | 11.00 | 0.50 | 0.19 | 0.09 |", page)
        self.assertIn("| 1 MiB | refused | 20.00 | - | - | 52.43 |", page)
        self.assertIn("Braid against NVIDIA NCCL 2.28.9", page)
        self.assertIn("- init_ms: Braid 1.50, NVIDIA -", page)
        plot = os.path.join(self.plots, "2-h200", "allreduce-braid-direct-simple-buffsize-262144.svg")
        self.assertIn("](perf-plots/2-h200/allreduce-braid-direct-simple-buffsize-262144.svg)", page)
        root = ET.parse(plot).getroot()
        lines = root.findall("{http://www.w3.org/2000/svg}polyline")
        self.assertEqual(len(lines), 4)  # two panels, two libraries
        self.assertTrue(os.path.exists(os.path.join(self.plots, "4-h200", "allgather-windows-cuda-graph.svg")))
        # The README's headline: the machine with the most ranks, its plain cases (else all), the plot.
        with open(self.readme) as f:
            readme = f.read()
        self.assertTrue(readme.startswith("# Project\n\n" + perf_page.HEADLINE_BEGIN))
        self.assertTrue(readme.endswith(perf_page.HEADLINE_END + "\n\n## Install\n"))
        self.assertIn("braid-perf sweeps on 4 H200 against NVIDIA NCCL 2.28.9", readme)
        self.assertIn("| AllGather (windows, CUDA graph) | 0.50 | - | - | 0.2 / 52.4 | 2026-11-29 | "
                      "[plot](perf-plots/4-h200/allgather-windows-cuda-graph.svg) |", readme)
        self.assertNotIn("| AllReduce", readme)
        self.assertNotIn("![", readme)  # the plot it shows is the headline machine's AllReduce: none here
        self.assertIn("[performance.md](performance.md)", readme)

    def test_headline_shows_the_allreduce_plot_and_where_braid_is_slower(self):
        slower = copy.deepcopy(FIXTURE)
        for row in slower["rows"]:
            braid, nvidia = row["results"]
            if braid.get("time_us") and nvidia.get("time_us"):
                braid["time_us"] = nvidia["time_us"] * 1.5
        self.add("all_reduce.json", slower)
        self.assertEqual(self.run_page(), 0)
        with open(self.readme) as f:
            readme = f.read()
        self.assertIn("![AllReduce (BRAID_DIRECT_SIMPLE_BUFFSIZE=262144) on 2 H200: time and bus bandwidth against "
                      "size, Braid and NVIDIA NCCL](perf-plots/2-h200/allreduce-braid-direct-simple-buffsize-262144.svg)",
                      readme)
        self.assertIn("Where Braid is slower on 2 H200 (a band's geometric mean, any case of the page): AllReduce "
                      "(BRAID_DIRECT_SIMPLE_BUFFSIZE=262144) at <= 64 KiB (1.50)", readme)

    def test_check_mode(self):
        self.add("all_reduce.json", FIXTURE)
        self.assertEqual(self.run_page("--check"), 1)  # the page holds old text, the plot is missing
        self.assertEqual(self.read_page(), PAGE)        # and --check changed nothing
        with open(self.readme) as f:
            self.assertEqual(f.read(), README)
        self.assertFalse(os.path.exists(self.plots))
        self.assertEqual(self.run_page(), 0)
        self.assertEqual(self.run_page("--check"), 0)
        changed = copy.deepcopy(FIXTURE)
        changed["rows"][0]["results"][0]["time_us"] = 6.5
        self.add("all_reduce.json", changed)
        self.assertEqual(self.run_page("--check"), 1)

    def test_import_files_runs_by_machine_and_case_newest_last(self):
        incoming = os.path.join(self.dir, "out-json")
        os.makedirs(incoming)
        older = copy.deepcopy(FIXTURE)
        older["date"] = "2026-11-01T00:00:00Z"
        with open(os.path.join(incoming, "a.json"), "w") as f:
            json.dump(older, f)
        self.assertEqual(self.run_page("--import", incoming), 0)
        newer = os.path.join(self.dir, "b.json")
        with open(newer, "w") as f:
            json.dump(FIXTURE, f)
        self.assertEqual(self.run_page("--import", newer), 0)
        filed = os.path.join(self.data, "2-h200", "allreduce-braid-direct-simple-buffsize-262144.json")
        with open(filed) as f:
            self.assertEqual(json.load(f)["date"], FIXTURE["date"])  # the same case: replaced
        self.assertIn("| 2026-11-29 |", self.read_page())
        self.assertEqual(self.run_page("--check"), 0)

    def test_import_reads_the_runs_inside_a_tar_archive(self):
        logs = os.path.join(self.dir, "logs")
        os.makedirs(os.path.join(logs, "json"))
        with open(os.path.join(logs, "json", "all_reduce-p2.json"), "w") as f:
            json.dump(FIXTURE, f)
        with open(os.path.join(logs, "perf-all_reduce-p2.log"), "w") as f:
            f.write("not a run\n")
        with open(os.path.join(logs, "stray.json"), "w") as f:  # outside json/: not read
            f.write("{")
        archive = os.path.join(self.dir, "logs.tgz")
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(logs, arcname=".")
        self.assertEqual(self.run_page("--import", archive), 0)
        self.assertTrue(os.path.exists(os.path.join(self.data, "2-h200",
                                                    "allreduce-braid-direct-simple-buffsize-262144.json")))
        with tarfile.open(archive, "w:gz") as tar:  # a broken run is refused naming the archive and member
            broken = os.path.join(logs, "json", "all_reduce-p2.json")
            with open(broken, "w") as f:
                f.write("{")
            tar.add(broken, arcname="json/broken.json")
        self.assertEqual(self.run_page("--import", archive), 2)

    def test_only_variables_a_library_reads_set_a_case_apart(self):
        doc = copy.deepcopy(FIXTURE)
        doc["environment"] += ["BRAID_PREBUILT=/tmp/stage", "NCCL_VERSION=2.28.3-1", "NCCL_DEBUG=INFO"]
        self.assertEqual(perf_page.read_case(doc, "x").slug(), perf_page.read_case(FIXTURE, "x").slug())
        doc["environment"] += ["NCCL_PROTO=LL", "NCCL_IB_HCA=mlx5"]  # Braid's parameter; one NVIDIA's only
        self.assertEqual(perf_page.read_case(doc, "x").slug(),
                         "allreduce-braid-direct-simple-buffsize-262144-nccl-proto-ll-nccl-ib-hca-mlx5")

    def test_a_sweep_from_mid_sizes_is_a_case_of_its_own(self):
        full = copy.deepcopy(FIXTURE)
        full["command"] += ["-b", "8", "-e", "1G", "-G", "20"]
        mid = copy.deepcopy(FIXTURE)
        mid["command"] += ["-b", "64K", "-e", "16M", "-G", "10"]
        self.assertEqual(perf_page.read_case(full, "x").title,
                         "AllReduce (CUDA graph, BRAID_DIRECT_SIMPLE_BUFFSIZE=262144)")
        self.assertEqual(perf_page.read_case(mid, "x").title,
                         "AllReduce (CUDA graph, 64 KiB-16 MiB, BRAID_DIRECT_SIMPLE_BUFFSIZE=262144)")
        lower = copy.deepcopy(FIXTURE)
        lower["command"] += ["-b", "64k"]  # braid-perf takes either case; -e defaults to 128M
        self.assertEqual(perf_page.read_case(lower, "x").title,
                         "AllReduce (64 KiB-128 MiB, BRAID_DIRECT_SIMPLE_BUFFSIZE=262144)")

    def test_plots_of_cases_no_longer_in_the_data_are_removed(self):
        self.add("all_reduce.json", FIXTURE)
        here = os.getcwd()
        os.chdir(self.dir)  # a relative plots folder keeps the plots the data gives
        try:
            self.assertEqual(perf_page.main(["--data", self.data, "--page", self.page, "--readme", self.readme,
                                             "--plots", "perf-plots"]), 0)
            self.assertEqual(os.listdir(os.path.join(self.plots, "2-h200")), ["allreduce-braid-direct-simple-"
                                                                              "buffsize-262144.svg"])
        finally:
            os.chdir(here)
        stray = os.path.join(self.plots, "2-h200", "gone.svg")
        with open(stray, "w") as f:
            f.write("<svg/>")
        self.assertEqual(self.run_page("--check"), 1)
        self.assertTrue(os.path.exists(stray))
        self.assertEqual(self.run_page(), 0)
        self.assertFalse(os.path.exists(stray))
        self.assertEqual(self.run_page("--check"), 0)

    def test_page_without_markers_gets_the_part_appended(self):
        with open(self.page, "w") as f:
            f.write("# Page\n")
        self.assertEqual(self.run_page(), 0)
        page = self.read_page()
        self.assertTrue(page.startswith("# Page\n\n" + perf_page.BEGIN))
        self.assertIn("No sweep is recorded", page)
        with open(self.readme) as f:
            self.assertIn("No braid-perf sweep is recorded in docs/perf-data yet", f.read())

    def test_refuses_documents_it_cannot_read(self):
        single = copy.deepcopy(FIXTURE)
        single["libraries"] = single["libraries"][:1]
        self.add("single.json", single)
        self.assertEqual(self.run_page(), 2)
        os.remove(os.path.join(self.data, "h200", "single.json"))
        with open(os.path.join(self.data, "h200", "broken.json"), "w") as f:
            f.write("{")
        self.assertEqual(self.run_page(), 2)
        os.remove(os.path.join(self.data, "h200", "broken.json"))
        rowless = copy.deepcopy(FIXTURE)
        rowless["rows"][0]["results"] = rowless["rows"][0]["results"][:1]  # one library's figures only
        self.add("rowless.json", rowless)
        self.assertEqual(self.run_page(), 2)
        self.assertEqual(self.read_page(), PAGE)


if __name__ == "__main__":
    unittest.main()
