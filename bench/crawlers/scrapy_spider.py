# Scrapy (Debian's python3-scrapy) on the fixture site, with the bench task's selectors and canonical rules.
# Settings: the bench's concurrency (total and per domain), robots.txt obeyed, items to a JSON-lines feed (Scrapy's
# usual item storage), logging at WARNING; everything else is Scrapy's default.
# Run: /usr/bin/python3 scrapy_spider.py START CONCURRENCY FEED_FILE  -> prints one JSON line { "result": ... }
import json
import re
import sys
import time
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

import scrapy
from scrapy.crawler import CrawlerProcess

START, CONCURRENCY, FEED = sys.argv[1], int(sys.argv[2]), sys.argv[3]
HOST = urlsplit(START).netloc
BOOK = re.compile(r"/catalogue/book-[^/]*\.html$")
LIST = re.compile(r"(^/$|/catalogue/page-[^/]*\.html$)")
PRICE = re.compile(r"[0-9.]+")
STOCK = re.compile(r"\((\d+) available\)")
counts = {"pages": 0, "items": {}}


def canonical(href, base):
    u = urlsplit(urljoin(base, href))
    if u.scheme not in ("http", "https") or u.netloc != HOST:
        return None
    q = sorted((k, v) for k, v in parse_qsl(u.query, keep_blank_values=True) if k not in ("ref", "src"))
    return urlunsplit((u.scheme, u.netloc, u.path or "/", urlencode(q), ""))


def text(sel):
    return " ".join("".join(sel[:1].css("::text").getall() if sel else []).split()) if sel else ""


def alltext(sel):
    return " ".join(" ".join(sel.css("*::text").getall()).split())


class BenchSpider(scrapy.Spider):
    name = "bench"
    allowed_domains = [urlsplit(START).hostname]

    def start_requests(self):
        yield scrapy.Request(canonical(START, START), callback=self.parse_list)

    def follow(self, response, selector, kind):
        for href in response.css(selector).xpath("@href").getall():
            url = canonical(href.strip(), response.url)
            if not url:
                continue
            k = kind
            if k is None:
                path = urlsplit(url).path
                k = "book" if BOOK.search(path) else "list" if LIST.search(path) else None
            if k:
                yield scrapy.Request(url, callback=self.parse_book if k == "book" else self.parse_list)

    def add(self, t, n):
        counts["items"][t] = counts["items"].get(t, 0) + n

    def parse_list(self, response):
        counts["pages"] += 1
        n = 0
        for pod in response.css("article.product_pod"):
            a = pod.css("h3 a")
            href = a.attrib.get("href") if a else None
            m = PRICE.search(alltext(pod.css("p.price_color")[:1]))
            n += 1
            yield {"type": "listing", "title": alltext(a[:1]), "price": m.group(0) if m else None, "url": urljoin(response.url, href) if href else None}
        self.add("listing", n)
        yield from self.follow(response, "ul.nav a, li.next a, ul.pages a, ul.sort a, header a, footer a", "list")
        yield from self.follow(response, "article.product_pod a", "book")

    def parse_book(self, response):
        counts["pages"] += 1
        n = 0
        for p in response.css("article.product_page"):
            price = PRICE.search(alltext(p.css("p.price_color")[:1]))
            stock = STOCK.search(alltext(p.css("p.availability")[:1]))
            img = p.css("img")
            src = img.attrib.get("src") if img else None
            n += 1
            yield {
                "type": "book",
                "title": alltext(p.css("h1")[:1]),
                "price": price.group(0) if price else None,
                "upc": alltext(p.css("td.upc")[:1]),
                "in_stock": stock.group(1) if stock else None,
                "tags": [alltext(t) for t in p.css("li.tag")],
                "cover": urljoin(response.url, src) if src else None,
            }
        self.add("book", n)
        yield from self.follow(response, "ul.related a, header a", None)


process = CrawlerProcess(
    settings={
        "CONCURRENT_REQUESTS": CONCURRENCY,
        "CONCURRENT_REQUESTS_PER_DOMAIN": CONCURRENCY,
        "ROBOTSTXT_OBEY": True,
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
        "FEEDS": {FEED: {"format": "jsonlines", "overwrite": True}},
    }
)
t0 = time.monotonic()
process.crawl(BenchSpider)
process.start()
seconds = time.monotonic() - t0
print(json.dumps({"result": {"pages": counts["pages"], "items": counts["items"], "seconds": seconds, "pagesPerSec": counts["pages"] / seconds}}))
