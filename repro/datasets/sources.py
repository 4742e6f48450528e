"""Registry of the raw data files that the experiments read.

Spec: ../shared/data/MANIFEST.md (file names, canonical URLs, sha256, byte sizes, row counts,
licenses and provenance) and ../shared/data/checksums.sha256.

Each :class:`RawSource` is one file, named by a short kebab-case id (``adult-data``). Its
``filename`` is its relative path both inside the local cache (``REPRO_DATA_DIR``) and inside a
mirror folder (``REPRO_DATA_MIRROR``). Canonical files keep the exact name and bytes that their
canonical URL serves. Derived files (``derived/...``) are processed substitutes: they have no public
URL and come only from the project mirror. Never change what a registered name means; register a
new name instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from repro.errors import InvalidParameterError, UnknownNameError, suggest

__all__ = ["SOURCES", "RawSource", "get_source", "source_names"]

_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
_NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")

_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"
_UCI_LICENSE = "CC BY 4.0 (UCI Machine Learning Repository)"
_ADULT_CITATION = "Becker, B. & Kohavi, R. (1996). Adult. UCI Machine Learning Repository."
_PARKINSONS_CITATION = (
    "Tsanas, A., Little, M. A., McSharry, P. E. & Ramig, L. O. (2010). Accurate telemonitoring of "
    "Parkinson's disease progression by noninvasive speech tests. IEEE Trans. Biomed. Eng. 57(4)."
)
_CREDIT_CITATION = (
    "Yeh, I.-C. & Lien, C.-H. (2009). The comparisons of data mining techniques for the predictive "
    "accuracy of probability of default of credit card clients. Expert Syst. Appl. 36(2)."
)
_CREDIT_URL = f"{_UCI}/00350/default%20of%20credit%20card%20clients.xls"
_LSAC_URL = "https://storage.googleapis.com/lawschool_dataset/bar_pass_prediction.csv"
_LSAC_LICENSE = ("LSAC bar passage data (Wightman 1998), redistributed by Google for the "
                 "TF Fairness Indicators case study")
_LSAC_CITATION = ("Wightman, L. F. (1998). LSAC National Longitudinal Bar Passage Study. "
                  "LSAC Research Report Series.")
_RETIRING_ADULT_CITATION = ("Ding, F., Hardt, M., Miller, J. & Schmidt, L. (2021). Retiring Adult: "
                            "New Datasets for Fair Machine Learning. NeurIPS 2021.")
_FOLKTABLES_RECON_URL = (
    "https://raw.githubusercontent.com/socialfoundations/folktables/main/adult_reconstruction.csv"
)
_LDP_FAIRNESS_REPO = "GitHub hharcolezi/ldp-fairness-impact at 51275213"
_UTKFACE_LICENSE = "Non-commercial research use only (UTKFace dataset terms)"
_UTKFACE_CITATION = ("Zhang, Z., Song, Y. & Qi, H. (2017). Age Progression/Regression by Conditional "
                     "Adversarial Autoencoder. CVPR 2017. https://susanqq.github.io/UTKFace/")
_UTKFACE_CANONICAL = ("official archive UTKFace.tar.gz (aligned & cropped) from the project page "
                      "https://susanqq.github.io/UTKFace/ (served from a cloud drive)")


@dataclass(frozen=True)
class RawSource:
    """One registered raw data file.

    Parameters
    ----------
    name : str
        Stable kebab-case id used on the command line (``adult-data``).
    filename : str
        Relative path inside the cache and inside the mirror (``adult.data``,
        ``derived/db_LSAC.csv``).
    url : str or None
        Canonical download URL; None for derived files, which only come from a mirror.
    sha256 : str
        Expected sha256 of the file (64 lowercase hex digits).
    size : int or None
        Exact size in bytes, if known.
    rows : int or None
        Number of data records (headers and blank lines not counted); None for text files.
    license, citation, description : str
        Short provenance strings, from the manifest.
    canonical : bool
        True if the bytes are those served by the canonical URL; False for derived substitutes.
    notes : str, default=""
        Caveats (for example "not byte-verified against canonical").
    """

    name: str
    filename: str
    url: str | None
    sha256: str
    size: int | None
    rows: int | None
    license: str
    citation: str
    description: str
    canonical: bool
    notes: str = ""

    def __post_init__(self) -> None:
        if not _NAME_RE.match(self.name):
            raise InvalidParameterError(
                f"`name` of a data source must be kebab-case (a-z, 0-9, '-'); got {self.name!r}."
            )
        if not _SHA256_RE.match(self.sha256):
            raise InvalidParameterError(
                f"`sha256` of data source {self.name!r} must be 64 lowercase hex digits; "
                f"got {self.sha256!r}."
            )
        parts = self.filename.split("/")
        if not self.filename or self.filename.startswith("/") or "\\" in self.filename or any(
            p in ("", ".", "..") for p in parts
        ):
            raise InvalidParameterError(
                f"`filename` of data source {self.name!r} must be a relative path with '/' "
                f"separators and no '.' or '..' parts; got {self.filename!r}."
            )
        if self.size is not None and self.size < 0:
            raise InvalidParameterError(
                f"`size` of data source {self.name!r} must be >= 0 or None; got {self.size}."
            )


_ALL: tuple[RawSource, ...] = (
    # --- canonical files (top level of the mirror) -------------------------------------------
    RawSource(
        name="adult-data",
        filename="adult.data",
        url=f"{_UCI}/adult/adult.data",
        sha256="5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
        size=3_974_305,
        rows=32_561,
        license=_UCI_LICENSE,
        citation=_ADULT_CITATION,
        description="UCI Adult (Census Income), train split; 15 columns, no header.",
        canonical=True,
    ),
    RawSource(
        name="adult-test",
        filename="adult.test",
        url=f"{_UCI}/adult/adult.test",
        sha256="a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
        size=2_003_153,
        rows=16_281,
        license=_UCI_LICENSE,
        citation=_ADULT_CITATION,
        description="UCI Adult, test split; 15 columns, no header.",
        canonical=True,
        notes="First line is '|1x3 Cross validator' (skip it); labels end with '.'.",
    ),
    RawSource(
        name="adult-names",
        filename="adult.names",
        url=f"{_UCI}/adult/adult.names",
        sha256="c248284c0b5de30c9e1958d6cdd168a34a654758b620e68f46aefa83fc0a576a",
        size=5_229,
        rows=None,
        license=_UCI_LICENSE,
        citation=_ADULT_CITATION,
        description="UCI Adult, documentation (text).",
        canonical=True,
    ),
    RawSource(
        name="compas-two-years",
        filename="compas-scores-two-years.csv",
        url=("https://raw.githubusercontent.com/propublica/compas-analysis/master/"
             "compas-scores-two-years.csv"),
        sha256="c451db85908b2f7fef1d83203bedf6b71ecda0d5af468d82ae62178f91d0cc7d",
        size=2_546_489,
        rows=7_214,
        license="ProPublica data (repository has no license file)",
        citation=("Larson, J., Mattu, S., Kirchner, L. & Angwin, J. (2016). How We Analyzed the "
                  "COMPAS Recidivism Algorithm. ProPublica."),
        description="ProPublica COMPAS recidivism, two-year; 53 columns + header.",
        canonical=True,
    ),
    RawSource(
        name="lsac-bar-pass",
        filename="bar_pass_prediction.csv",
        url=_LSAC_URL,
        sha256="b75568ff25e966b4c19852105e94e8e52475191523bdcfe62df985c690baed38",
        size=3_603_608,
        rows=22_407,
        license=_LSAC_LICENSE,
        citation=_LSAC_CITATION,
        description="LSAC National Longitudinal Bar Passage Study (TF Fairness Indicators copy); "
                    "39 columns + header.",
        canonical=True,
        notes=("Not byte-verified against the canonical URL: no public checksum was found. The "
               "sha256 pins the mirror copy (from hharcolezi/ldp-fairness-impact); row and column "
               "counts match the known dataset. A download from the URL may fail verification."),
    ),
    RawSource(
        name="parkinsons-updrs",
        filename="parkinsons_updrs.data",
        url=f"{_UCI}/parkinsons/telemonitoring/parkinsons_updrs.data",
        sha256="f2c7d5025dec4e92e7feae367a5f7ccf58789a10ac6b54bdf15976c599f9dd39",
        size=911_261,
        rows=5_875,
        license=_UCI_LICENSE,
        citation=_PARKINSONS_CITATION,
        description="UCI Parkinsons Telemonitoring; 22 columns + header, 42 subjects.",
        canonical=True,
        notes="No trailing newline, as in the canonical file.",
    ),
    RawSource(
        name="parkinsons-names",
        filename="parkinsons_updrs.names",
        url=f"{_UCI}/parkinsons/telemonitoring/parkinsons_updrs.names",
        sha256="744dc2835eab5c0fc744c638e5e6b05e656788f60f8aa2aba9d48e21c629f7c2",
        size=4_423,
        rows=None,
        license=_UCI_LICENSE,
        citation=_PARKINSONS_CITATION,
        description="UCI Parkinsons Telemonitoring, documentation (text).",
        canonical=True,
        notes="Probably canonical: no public checksum was found.",
    ),
    RawSource(
        name="adult-reconstruction",
        filename="adult_reconstruction.csv",
        url=_FOLKTABLES_RECON_URL,
        sha256="4895fd481e7ae6e2ca423e6213454b39f0f7ec0efcd741ad2f6c667554f0eb51",
        size=5_013_980,
        rows=49_531,
        license="MIT-licensed repository (socialfoundations/folktables); data from Ding et al. 2021",
        citation=_RETIRING_ADULT_CITATION,
        description="Adult reconstruction with continuous income; 14 columns + header, '?' = missing.",
        canonical=True,
    ),
    RawSource(
        name="credit-card-xls",
        filename="default of credit card clients.xls",
        url=_CREDIT_URL,
        sha256="30c6be3abd8dcfd3e6096c828bad8c2f011238620f5369220bd60cfc82700933",
        size=None,
        rows=30_000,
        license=_UCI_LICENSE,
        citation=_CREDIT_CITATION,
        description="UCI Default of Credit Card Clients, canonical Excel file; 25 columns, "
                    "2 header rows.",
        canonical=True,
        notes=("Not in the project mirror; sha256 as pinned by scikit-learn-contrib/skope-rules. "
               "derived/default_of_credit_card_clients.tsv (credit-card-tsv) holds the same values."),
    ),
    # --- derived substitutes (derived/ in the mirror): NOT canonical, no public URL ------------
    RawSource(
        name="credit-card-tsv",
        filename="derived/default_of_credit_card_clients.tsv",
        url=None,
        sha256="8c14eb1667cea74d666a1251a3048824cec9bd3c10e400fa964609104332b839",
        size=2_867_209,
        rows=30_000,
        license=_UCI_LICENSE,
        citation=_CREDIT_CITATION,
        description="UCI Default of Credit Card Clients as tab-separated text (derived substitute).",
        canonical=False,
        notes=("Full content, wrong format: the first xls header row (X1..X23,Y) is missing, the "
               "header is ID, LIMIT_BAL, ...; trailing blank line. Read with sep='\\t'. From "
               "GitHub Lansform/credit-worthiness at 365bb543."),
    ),
    RawSource(
        name="db-adult-processed-26k",
        filename="derived/db_adult_processed_26k.csv",
        url=None,
        sha256="86b00911881f1a37bd5d6ee3873f73c7d13ee5b32814dfc915c534fb0ca851df",
        size=1_174_124,
        rows=45_849,
        license="Data from Ding et al. 2021; file from an MIT-licensed repository",
        citation=_RETIRING_ADULT_CITATION,
        description="Adult reconstruction, processed: income > 26000, 11 label-encoded columns.",
        canonical=False,
        notes=(f"From {_LDP_FAIRNESS_REPO}. Rows with '?' dropped; every column label-encoded "
               "(age and hours-per-week are rank codes); continuous income lost."),
    ),
    RawSource(
        name="db-lsac",
        filename="derived/db_LSAC.csv",
        url=None,
        sha256="296a428e55cc5f2b7f4f8d9374f6c11320dfe022a64e752a582014bf0e560e1d",
        size=306_315,
        rows=20_427,
        license=_LSAC_LICENSE,
        citation=_LSAC_CITATION,
        description="LSAC bar passage, processed: 7 label-encoded columns, NaN rows dropped.",
        canonical=False,
        notes=(f"From {_LDP_FAIRNESS_REPO}. race1 = 1 for non-black; ugpa rounded to 0.5, lsat to "
               "an integer; then every column label-encoded."),
    ),
    RawSource(
        name="acs-income-ca-2018-test",
        filename="derived/acs_income_ca_2018_test.csv",
        url=None,
        sha256="bde56fe5ba1453123be17c5a5207957d673d4866c91d2fd9e0ea0408d11b55ba",
        size=2_045_607,
        rows=39_133,
        license="US Census Bureau ACS PUMS (public US government data)",
        citation=("U.S. Census Bureau, ACS PUMS 2018 1-Year (California), folktables ACSIncome "
                  "(Ding et al. 2021)."),
        description="folktables ACSIncome, CA 2018 1-Year, 20 % test split; 11 float columns.",
        canonical=False,
        notes=("PINCP is the boolean label PINCP > 50000, not income. Split with "
               "train_test_split(test_size=0.2, random_state=42); the train split is not "
               "available. From GitHub Koc13/aide-fairness-evaluation at c715d9d0."),
    ),
    RawSource(
        name="utkface-archive",
        filename="derived/UTKFace.tar.gz",
        url=None,
        sha256="5f1deda98da38f111ad452aae26b876c2c3a63ce21b64e60e093a2d385496247",
        size=105_798_354,
        rows=23_708,
        license=_UTKFACE_LICENSE,
        citation=_UTKFACE_CITATION,
        description="UTKFace aligned & cropped faces: all 23,708 JPEGs (200x200x3) in UTKFace/, "
                    "original image bytes, repacked archive.",
        canonical=False,
        notes=(f"Canonical source: {_UTKFACE_CANONICAL}. The image bytes are the canonical ones "
               "(verified against four independent public copies); the archive is repacked "
               "deterministically, so verify images by utkface-image-list (repro.datasets.utkface "
               "checks every image). From GitHub JSWLOM/utkface-age-prediction at 0ee1afb5."),
    ),
    RawSource(
        name="utkface-image-list",
        filename="derived/UTKFace.images.sha256",
        url=None,
        sha256="f46941580dc85fe21beb0bae2faca4f7cf8317384a775df25e631c4c612ce01b",
        size=2_462_597,
        rows=23_708,
        license=_UTKFACE_LICENSE,
        citation=_UTKFACE_CITATION,
        description="Per-image sha256 list of UTKFace (one 'sha256  name' line per image, sorted by "
                    "name, C locale); any extraction of the official archive reproduces it.",
        canonical=False,
        notes="Project-made checksum list (no public URL).",
    ),
)


def _build(sources: tuple[RawSource, ...]) -> dict[str, RawSource]:
    out: dict[str, RawSource] = {}
    files: set[str] = set()
    for src in sources:
        if src.name in out or src.filename in files:
            raise InvalidParameterError(
                f"data source names and filenames must be unique; {src.name!r} "
                f"({src.filename!r}) is registered twice."
            )
        out[src.name] = src
        files.add(src.filename)
    return out


SOURCES: dict[str, RawSource] = _build(_ALL)
"""Every registered raw file, by name (insertion order: canonical files first)."""


def source_names() -> list[str]:
    """Registered source names, in registry order."""
    return list(SOURCES)


def get_source(name: str) -> RawSource:
    """The registered :class:`RawSource` called ``name``.

    Raises
    ------
    UnknownNameError
        If ``name`` is not registered; the message suggests close matches.
    """
    try:
        return SOURCES[name]
    except KeyError:
        pass
    message = suggest(name, SOURCES, what="data source")
    if "`repro list`" in message:  # no close match: list the sources rather than the experiments
        message = (f"unknown data source {name!r}; valid: {', '.join(sorted(SOURCES))} "
                   "(see `repro data list`)")
    raise UnknownNameError(message)
