import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

// A shop whose product pages carry their data three ways besides the visible markup (issue 30): JSON-LD
// (a Product in an @graph), microdata (itemscope/itemprop on the visible elements, an Offer nested in the
// Product, values in `content`, `<meta>`, `<link>`, `<img src>`, `<time datetime>`) and OpenGraph
// (`og:*`, `product:price:*`, a Twitter card by `name`). Every value agrees with what the page shows, so a test
// can check each source against the page.

export interface Product {
  readonly id: number;
  readonly sku: string;
  readonly name: string;
  /** As the page shows it, and as the structured data writes it (no currency sign). */
  readonly price: string;
  readonly currency: string;
  readonly brand: string;
  readonly released: string;
  readonly inStock: boolean;
}

export const PRODUCTS: readonly Product[] = [
  {
    id: 1,
    sku: 'L-100',
    name: 'Brass Lamp',
    price: '19.50',
    currency: 'EUR',
    brand: 'Acme',
    released: '2026-03-01',
    inStock: true,
  },
  {
    id: 2,
    sku: 'C-200',
    name: 'Oak Chair',
    price: '120.00',
    currency: 'EUR',
    brand: 'Woodly',
    released: '2025-11-15',
    inStock: false,
  },
];

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');

/** The product's image path (absolute on the site). */
export const imagePath = (p: Product) => `/img/${p.sku}.jpg`;

export function productHtml(p: Product): string {
  const availability = `https://schema.org/${p.inStock ? 'InStock' : 'OutOfStock'}`;
  const ld = {
    '@context': 'https://schema.org',
    '@graph': [
      { '@type': 'WebPage', name: `${p.name} | Shop` },
      {
        '@type': 'Product',
        name: p.name,
        sku: p.sku,
        image: imagePath(p),
        brand: { '@type': 'Brand', name: p.brand },
        offers: { '@type': 'Offer', price: p.price, priceCurrency: p.currency, availability },
      },
    ],
  };
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(p.name)} | Shop</title>
<meta property="og:type" content="product">
<meta property="og:title" content="${esc(p.name)}">
<meta property="og:image" content="${imagePath(p)}">
<meta property="product:price:amount" content="${p.price}">
<meta property="product:price:currency" content="${p.currency}">
<meta name="twitter:title" content="${esc(p.name)}">
<script type="application/ld+json">${JSON.stringify(ld)}</script>
</head><body><nav><a href="/">Shop</a></nav>
<article class="product" itemscope itemtype="https://schema.org/Product">
<h1 itemprop="name">${esc(p.name)}</h1>
<img itemprop="image" src="${imagePath(p)}" alt="">
<p>Brand: <span itemprop="brand" itemscope itemtype="https://schema.org/Brand"><span itemprop="name" class="brand">${esc(p.brand)}</span></span></p>
<p>SKU: <span class="sku" itemprop="sku">${p.sku}</span></p>
<p>Released: <time itemprop="releaseDate" datetime="${p.released}">${p.released}</time></p>
<div itemprop="offers" itemscope itemtype="https://schema.org/Offer">
<span class="price" itemprop="price" content="${p.price}">${p.currency === 'EUR' ? '€' : ''}${p.price}</span>
<meta itemprop="priceCurrency" content="${p.currency}">
<link itemprop="availability" href="${availability}"><span class="stock">${p.inStock ? 'In stock' : 'Out of stock'}</span>
</div>
</article></body></html>`;
}

export interface ProductSite {
  readonly url: string;
  close(): Promise<void>;
}

/** `/` lists the products (`a.p`), `/p/<id>` is a product page. */
export async function serveProducts(): Promise<ProductSite> {
  const server: Server = createServer((req, res) => {
    const m = /^\/p\/(\d+)$/.exec(req.url ?? '');
    const p = m ? PRODUCTS.find((x) => x.id === Number(m[1])) : undefined;
    if (req.url === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return res.end(
        `<!doctype html><html><body>${PRODUCTS.map((x) => `<a class="p" href="/p/${x.id}">${esc(x.name)}</a>`).join(' ')}</body></html>`,
      );
    }
    if (!p) return res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not found</h1>');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(productHtml(p));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
